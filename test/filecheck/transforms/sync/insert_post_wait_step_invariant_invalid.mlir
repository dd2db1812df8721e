// RUN: tilesync-opt %s -p sync-generate-policies,sync-insert-post-wait,sync-verify --verify-diagnostics | filecheck %s

// Waits that run at a tile's step 0 only cover a kernel whose loads start there: this one's
// k-loop starts at step 1, so no wait ever runs, and sync-verify refuses the program.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @conv1(%x: memref<?xf16>, %h: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @conv2(%h: memref<?xf16>, %y: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      %c1 = arith.constant 1 : index
      %c36 = arith.constant 36 : index
      scf.for %kt = %c1 to %c36 step %c1 {
        sync.load_point operand 0 [%r, %c] step %kt
      }
      gpu.return
    }
  }
  sync.stage @conv1 {kernel = @k::@conv1, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 256>}
  sync.stage @conv2 {kernel = @k::@conv2, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 256>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 - 1, 0) forall s0 in [0, 36), s1 in [0, 3) clipped
  sync.launch @conv1 {priority = -1 : i64}
  sync.launch @conv2 {pdl = true}
}

// CHECK: insert_post_wait_step_invariant_invalid.mlir:17:9: sync-verify: consumer tile (0, 0) of @conv2: sync.load_point operand 0, which reads producer tile (0, 0) of @conv1 (semaphore 0), but no wait on that semaphore precedes it
