// RUN: tilesync-opt %s --split-input-file -p dataflow-form-pipeline --verify-diagnostics | filecheck %s

// Every stage must say what kind of operator it is: the selection rules read it.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
}
// CHECK: form_pipeline_invalid.mlir:11:3: dataflow-form-pipeline: stage @b has no 'dataflow.kind' (gemm | elementwise | reduction | gather | bulk)

// -----

// A kind that is not a string is named as such, not as a missing kind.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = 3 : i64}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
}
// CHECK: form_pipeline_invalid.mlir:26:3: dataflow-form-pipeline: stage @b: 'dataflow.kind' must be a string (gemm | elementwise | reduction | gather | bulk), got 3 : i64
