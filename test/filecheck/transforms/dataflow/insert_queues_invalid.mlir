// RUN: tilesync-opt %s -p 'dataflow-form-pipeline,dataflow-insert-queues' --verify-diagnostics | filecheck %s

// Every tile of @b reads every tile of @a's row: a queue entry goes to one CTA of a stage.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.dependency @a -> @b operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
}
// CHECK: insert_queues_invalid.mlir:12:3: dataflow-insert-queues: producer tile (0, 0) of @a is read by 2 tiles of @b: a queue hands each entry to one CTA of a stage (split @b's hidden dimension into stages)
