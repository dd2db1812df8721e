// input 13522 of seed 3003: test/filecheck/transforms/sync/insert_post_wait_step_invariant.mlir; integer
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @conv1(%x: memref<?xf16>, %h: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @conv2(%h: memref<?xf16>, %y: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c36 = arith.constant 36 : index
      scf.for %kt = %c0 to %c36 step %c1 {
        sync.load_point operand 0 [%r, %c] step %kt
      }
      gpu.return
    }
  }
  sync.stage @conv1 {kernel = @k::@conv1, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 256>}
  sync.stage @conv2 {kernel = @k::@conv2, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 256>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 - 1, 0) forall s0 in [0, 36), s1 in [0, 1025) clipped
  sync.launch @conv1 {priority = -1 : i64}
  sync.launch @conv2 {pdl = true}
}
