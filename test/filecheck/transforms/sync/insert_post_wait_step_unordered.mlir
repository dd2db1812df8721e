// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait,sync-verify | filecheck %s

// A split-K consumer: slice z (grid z) runs k-steps [2z, 2z + 2) of the dependency's range
// [0, 4). Its loop does not start at the range's start (its lower bound is not even a
// constant), so "wait at the first steps only" would leave slice 1 without a wait: every
// step waits, and sync-verify proves the program.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @p(%x: memref<?xf32>, %h: memref<?xf32>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @c(%h: memref<?xf32>, %y: memref<?xf32>) kernel {
      %r, %c, %z = sync.tile : index, index, index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %lo = arith.muli %z, %c2 : index
      %hi = arith.addi %lo, %c2 : index
      scf.for %kt = %lo to %hi step %c1 {
        sync.load_point operand 0 [%r, %c, %z] step %kt
      }
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 1, 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 1, 1, 1>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1, d2)[s0] -> (d0, s0) forall s0 in [0, 4)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK-LABEL: gpu.func @c(
// CHECK:         scf.for %kt = %lo to %hi step %c1 {
// CHECK-NEXT:      sync.wait %sems_p[%r, %kt]
// CHECK-NEXT:      sync.load_point operand 0 [%r, %c, %z] step %kt {sync.filled}
// CHECK:         sync.stage @c {{.*}}sync.verified = "proved"

// -----

// A k-loop walked backwards (step n - 1 - i): its first load is of the range's last step.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @p(%x: memref<?xf32>, %h: memref<?xf32>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @c(%h: memref<?xf32>, %y: memref<?xf32>) kernel {
      %r, %c = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      scf.for %i = %c0 to %c3 step %c1 {
        %kt = arith.subi %c3, %i : index
        %k = arith.subi %kt, %c1 : index
        sync.load_point operand 0 [%r, %c] step %k
      }
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 1, 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 1, 1>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 3)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK-LABEL: gpu.func @c(
// CHECK:           sync.wait %sems_p[%r, %k]
// CHECK-NEXT:      sync.load_point operand 0 [%r, %c] step %k {sync.filled}
// CHECK:         sync.stage @c {{.*}}sync.verified = "proved"
