// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s

// A kernel whose block has no threads along one dimension: refused where it is declared, not
// counted (a block of 0 threads has no occupancy, nor whole warps).
builtin.module {
  gpu.module @kernels {
    gpu.func @k(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 0, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @b {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: verify_block_size_invalid.mlir:7:5: dataflow-verify: kernel @k: gpu.known_block_size [128, 0, 1] has a dimension below 1: a block has threads

// -----

// The same in a cluster queue's kernel, where the block's warps are counted first.
builtin.module {
  gpu.module @kernels {
    gpu.func @k(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 0, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h cluster : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @b {kernel = @kernels::@k, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: verify_block_size_invalid.mlir:24:5: dataflow-verify: kernel @k: gpu.known_block_size [0, 1, 1] has a dimension below 1: a block has threads
