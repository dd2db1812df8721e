// A reduction whose tiles are of element type none (fuzz seed 20271207, input 14551)
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
    gpu.func @add() kernel {
      gpu.return
    }
  }
  sync.stage @l1 {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @l2 {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @tap {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "elementwise"}
  sync.stage @l3 {kernel = @k::@f, grid = array<i64: 32>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@add, dataflow.element = none}
  sync.dependency @l1 -> @l2 operand 0 tiles (d0) -> (d0)
  sync.dependency @l1 -> @tap operand 0 tiles (d0) -> (d0)
  sync.dependency @l2 -> @l3 operand 0 tiles (d0)[s0] -> (d0 * 2 + s0) forall s0 in [0, 2)
}
