// RUN: tilesync-opt %s -p 'dataflow-form-pipeline,dataflow-split-reductions' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FORM
// RUN: tilesync-opt %s -p 'dataflow-split-reductions' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=SPLIT

// A reduction on a 3-D grid: its fan-in would need a fourth dimension for the partial index.
// dataflow-form-pipeline leaves it out and says why; nothing else forms a pipeline.
builtin.module {
  gpu.module @k {
    gpu.func @g1() kernel { gpu.return }
    gpu.func @g2() kernel { gpu.return }
    gpu.func @add() kernel { gpu.return }
  }
  sync.stage @gemm1 {kernel = @k::@g1, grid = array<i64: 2, 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "gemm"}
  sync.stage @gemm2 {kernel = @k::@g2, grid = array<i64: 2, 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@add}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1, d2)[s0] -> (d0, d1, s0) forall s0 in [0, 8)
}

// FORM: builtin.module attributes {dataflow.excluded = ["@gemm2: reduction @gemm2 cannot split into 2 partials: its fan-in's grid [2, 4, 1, 2] (the partial index as one more dimension) is no launch grid: a grid has 1 to 3 dimensions, got 4"]}
// FORM-NOT: dataflow.pipeline

// -----

// The same reduction in a hand-written pipeline: refused where it is declared.
builtin.module {
  gpu.module @k {
    gpu.func @g1() kernel { gpu.return }
    gpu.func @g2() kernel { gpu.return }
    gpu.func @add() kernel { gpu.return }
  }
  sync.stage @gemm1 {kernel = @k::@g1, grid = array<i64: 2, 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "gemm", dataflow.pipeline = @p}
  sync.stage @gemm2 {kernel = @k::@g2, grid = array<i64: 2, 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@add, dataflow.pipeline = @p}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1, d2)[s0] -> (d0, d1, s0) forall s0 in [0, 8)
  dataflow.pipeline @p {
    dataflow.stage @gemm1 {kernel = @k::@g1, resource = #dataflow.resource<tensor>, ctas = 64 : i64, inputs = [], outputs = [], tiles = 64 : i64}
    dataflow.stage @gemm2 {kernel = @k::@g2, resource = #dataflow.resource<tensor>, ctas = 8 : i64, inputs = [], outputs = [], tiles = 8 : i64}
  }
}

// SPLIT: split_reductions_grid_invalid.mlir:30:3: dataflow-split-reductions: reduction @gemm2 cannot split into 2 partials: its fan-in's grid [2, 4, 1, 2] (the partial index as one more dimension) is no launch grid: a grid has 1 to 3 dimensions, got 4
