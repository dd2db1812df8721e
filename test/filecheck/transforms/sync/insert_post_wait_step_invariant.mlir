// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait,sync-verify | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait | filecheck %s --check-prefix=ONCE

// A conv chain with one column of producer tiles: every k-step of a conv2 tile reads the same
// conv1 rows (d0 - 1 .. d0 + 1; the step s0 is not in the map), so the waits run at step 0
// only, not at each of the 36 steps; sync-verify proves the later steps covered by them.
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
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 - 1, 0) forall s0 in [0, 36), s1 in [0, 3) clipped
  sync.launch @conv1 {priority = -1 : i64}
  sync.launch @conv2 {pdl = true}
}

// ONCE-LABEL: gpu.func @conv2(
// ONCE:         scf.for %kt = %c0 to %c36 step %c1 {
// ONCE-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// ONCE-NEXT:      %[[FIRST:.*]] = arith.cmpi slt, %kt, %[[ONE]] : index
// ONCE-NEXT:      scf.if %[[FIRST]] {
// ONCE:             scf.for %s1 =
// ONCE:               sync.wait %sems_conv1[
// ONCE:           sync.load_point operand 0 [%r, %c] step %kt {sync.filled}
// CHECK: sync.stage @conv2 {{.*}}sync.verified = "proved"
