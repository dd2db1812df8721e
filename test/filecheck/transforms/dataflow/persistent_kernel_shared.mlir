// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{debug=false},dataflow-persistent-kernel' | filecheck %s

// A stage kernel that another op also names (here a cuSync stage launches it on its own) keeps
// its body when its pipeline is fused; the one only the pipeline names loses it.
builtin.module {
  gpu.module @kernels {
    gpu.func @producer(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
      %b = gpu.block_id x
      %v = arith.index_cast %b : index to i32
      %w = arith.sitofp %v : i32 to f32
      %tid = gpu.thread_id x
      memref.store %w, %e[%tid] : memref<64xf32>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @consumer(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %tid = gpu.thread_id x
      %c = arith.constant 1.0 : f32
      memref.store %c, %out[%tid] : memref<?xf32>
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @make {kernel = @kernels::@producer, resource = #dataflow.resource<simt>, ctas = 3 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @take {kernel = @kernels::@consumer, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = []}
  }
  sync.stage @alone {kernel = @kernels::@consumer, grid = array<i64: 2>, block = array<i64: 64, 1, 1>, tile = array<i64: 64>}
}

// CHECK-LABEL: gpu.func @producer(
// CHECK-SAME:      tilesync.fused_into = @kernels::@p_persistent
// CHECK-NEXT:    gpu.return
// CHECK-NEXT:  }
// CHECK-NEXT:  gpu.func @consumer(
// CHECK-NOT:       tilesync.fused_into
// CHECK-SAME:      {
// CHECK:         memref.store
// CHECK:         gpu.return
// CHECK:       gpu.func @p_persistent(
