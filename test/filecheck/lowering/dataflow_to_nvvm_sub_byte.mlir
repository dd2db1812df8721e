// RUN: tilesync-opt %s -p convert-dataflow-to-nvvm | filecheck %s

// An i1 payload takes a byte an element in memory, as the stores into the entry address it:
// 1024 of them are 1024 bytes (the ring's entries 1152 apart: payload and a metadata line),
// not 128 (1024 bits), which let a CTA's stores run into the next entries' metadata.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%x: !dataflow.queue<4 x memref<1024xi1>>) kernel {
      %t = dataflow.acquire_empty %x : !dataflow.queue<4 x memref<1024xi1>>
      %e = dataflow.entry %x, %t : !dataflow.queue<4 x memref<1024xi1>> -> memref<1024xi1>
      %tid = gpu.thread_id x
      %v = arith.constant true
      memref.store %v, %e[%tid] : memref<1024xi1>
      dataflow.release_full %x, %t : !dataflow.queue<4 x memref<1024xi1>>
      gpu.return
    }
    gpu.func @sink(%x: !dataflow.queue<4 x memref<1024xi1>>) kernel {
      %t = dataflow.acquire_full %x : !dataflow.queue<4 x memref<1024xi1>>
      dataflow.release_empty %x, %t : !dataflow.queue<4 x memref<1024xi1>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @x : !dataflow.queue<4 x memref<1024xi1>>
    dataflow.stage @src {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@x]}
    dataflow.stage @snk {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@x], outputs = []}
  }
}

// CHECK-LABEL: gpu.func @source(
// CHECK:         arith.constant 1152 : i64
