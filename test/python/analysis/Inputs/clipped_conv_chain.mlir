// A 3x3 conv chain with a clipped halo (test_simulator.py).
builtin.module {
  gpu.module @convs {
    gpu.func @conv(%in: memref<?xf16>, %out: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      sync.load_point operand 0 [%r, %c]
      sync.store_point [%r, %c]
      gpu.return
    }
  }
  sync.stage @conv1 {kernel = @convs::@conv, grid = array<i64: 8, 4>, block = array<i64: 128>, tile = array<i64: 1, 64>}
  sync.stage @conv2 {kernel = @convs::@conv, grid = array<i64: 8, 4>, block = array<i64: 128>, tile = array<i64: 1, 64>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s0 - 1, s1) forall s0 in [0, 3), s1 in [0, 4) clipped
  sync.launch @conv1 {priority = -1 : i64}
  sync.launch @conv2 {pdl = true}
}
