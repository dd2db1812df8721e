// RUN: tilesync-opt %s --split-input-file -p 'dataflow-insert-queues' --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p 'dataflow-form-pipeline{pipeline=formed}' | filecheck %s --check-prefix=FORM

// Every tile of @b reads every tile of @a's row: a queue entry goes to one CTA of a stage. A
// pipeline written by hand with both is refused; dataflow-form-pipeline leaves @b out (and,
// with @a alone, forms none).
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  sync.stage @a {dataflow.kind = "gemm", dataflow.pipeline = @spatial, kernel = @k::@f, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>}
  sync.stage @b {dataflow.kind = "gemm", dataflow.pipeline = @spatial, kernel = @k::@f, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>}
  sync.dependency @a -> @b operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  dataflow.pipeline @spatial {
    dataflow.stage @a {tiles = 32 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 32 : i64, inputs = [], outputs = []}
    dataflow.stage @b {tiles = 8 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 8 : i64, inputs = [], outputs = []}
  }
}
// CHECK: insert_queues_invalid.mlir:15:3: dataflow-insert-queues: producer tile (0, 0) of @a is read by 2 tiles of @b: a queue hands each entry to one CTA of a stage (split @b's hidden dimension into stages)

// -----

builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  sync.stage @a {dataflow.kind = "gemm", kernel = @k::@f, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>}
  sync.stage @b {dataflow.kind = "gemm", kernel = @k::@f, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>}
  sync.dependency @a -> @b operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
}
// FORM-NOT: dataflow.pipeline @formed
