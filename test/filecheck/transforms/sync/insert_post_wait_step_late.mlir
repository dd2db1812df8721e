// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait,sync-verify | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait | filecheck %s --check-prefix=EVERY

// A consumer whose k-loop starts at step 1 of the dependency's range [0, 3) (it never reads
// column 0): "wait at the range's first step only" would never wait, so every step waits
// (unguarded), and sync-verify proves the program.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @p(%x: memref<?xf32>, %h: memref<?xf32>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @c(%h: memref<?xf32>, %y: memref<?xf32>) kernel {
      %r, %c = sync.tile : index, index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      scf.for %kt = %c1 to %c3 step %c1 {
        sync.load_point operand 0 [%r, %c] step %kt
      }
      sync.store_point [%r, %c]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 1, 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 1, 1>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 3)
  sync.launch @p
  sync.launch @c {pdl = true}
}

// EVERY-LABEL: gpu.func @c(
// EVERY:         scf.for %kt = %c1 to %c3 step %c1 {
// EVERY-NOT:       arith.cmpi
// EVERY:           sync.wait %sems_p[
// EVERY:           sync.load_point operand 0 [%r, %c] step %kt {sync.filled}
// CHECK: sync.stage @c {{.*}}sync.verified = "proved"
