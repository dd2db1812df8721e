// RUN: tilesync-opt %s -p 'dataflow-form-pipeline{pipeline=mlp},dataflow-split-reductions,dataflow-insert-queues' --verify-diagnostics | filecheck %s

// The fan-in and final stages a reduction splits into keep its location: a diagnostic about
// them (here: their partials' element type, none, has no size for a queue entry) points at
// the reduction (fuzz seed 20271207 reached a ValueError without a place).
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
    gpu.func @add() kernel {
      gpu.return
    }
  }
  sync.stage @l1 {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @l2 {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@add, dataflow.element = none}
  sync.dependency @l1 -> @l2 operand 0 tiles (d0)[s0] -> (d0 * 2 + s0) forall s0 in [0, 2)
}
// CHECK: split_reductions_location_invalid.mlir:16:3: dataflow-insert-queues: 'dataflow.element': queue payload element type none has no known size in memory
