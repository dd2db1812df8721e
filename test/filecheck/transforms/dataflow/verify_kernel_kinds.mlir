// RUN: tilesync-opt %s -p 'dataflow-verify{residency=false}' --split-input-file --verify-diagnostics | filecheck %s

// A stage kernel that takes its queues is followed only as a gpu.func with a body: a func.func
// (whose tickets were never checked with co-residency off) is refused in words.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  func.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) {
    %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
    func.return
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], tiles = 1 : i64}
    dataflow.stage @d {kernel = @dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], tiles = 1 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: its kernel @dst takes queues but is a 'func.func': dataflow-verify follows the tickets of a gpu.func kernel's body only

// -----

// A declaration: nothing to follow.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  func.func private @dst(!dataflow.queue<2 x memref<64xf32>>)
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], tiles = 1 : i64}
    dataflow.stage @d {kernel = @dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], tiles = 1 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: its kernel @dst takes queues but is a 'func.func': dataflow-verify follows the tickets of a gpu.func kernel's body only

// -----

// The same pipeline with both kernels gpu.funcs that keep the discipline: proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], tiles = 1 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], tiles = 1 : i64}
  }
}
// CHECK: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: left to the launch; tickets balanced on 1 queue(s)"}
