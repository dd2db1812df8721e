// RUN: tilesync-opt %s --split-input-file -p 'sync-select-policy{policy=tile},sync-insert-post-wait,sync-verify' | filecheck %s

// A conv chain whose conv1 has two column tiles, with TileSync (a semaphore per conv1 tile):
// k-step s0 of a conv2 tile reads column s0 mod 2 of rows d0 - 1 .. d0 + 1, so steps 0 and 1
// have read every tile the conv2 tile ever reads; the waits run at steps 0 and 1 only.
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
  sync.stage @conv1 {kernel = @k::@conv1, grid = array<i64: 8, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @conv2 {kernel = @k::@conv2, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 128>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 - 1, s0 mod 2) forall s0 in [0, 36), s1 in [0, 3) clipped
  sync.launch @conv1 {priority = -1 : i64}
  sync.launch @conv2 {pdl = true}
}

// CHECK-LABEL: gpu.func @conv2(
// CHECK:         scf.for %kt = %c0 to %c36 step %c1 {
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:      %[[EARLY:.*]] = arith.cmpi slt, %kt, %[[TWO]] : index
// CHECK-NEXT:      scf.if %[[EARLY]] {
// CHECK:             sync.wait %sems_conv1[
// CHECK:           sync.load_point operand 0 [%r, %c] step %kt {sync.filled}
// CHECK: sync.stage @conv2 {{.*}}sync.verified = "proved"

// -----

// Column s0 floordiv 18: the second column is first read at step 18, so steps 0 and 18 wait
// (the steps between read nothing new: each wait would stall the block on a semaphore load).
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
  sync.stage @conv1 {kernel = @k::@conv1, grid = array<i64: 8, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @conv2 {kernel = @k::@conv2, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 128>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 - 1, s0 floordiv 18) forall s0 in [0, 36), s1 in [0, 3) clipped
  sync.launch @conv1 {priority = -1 : i64}
  sync.launch @conv2 {pdl = true}
}

// CHECK-LABEL: gpu.func @conv2(
// CHECK:         scf.for %kt = %c0 to %c36 step %c1 {
// CHECK-NEXT:      %[[NINETEEN:.*]] = arith.constant 19 : index
// CHECK-NEXT:      %[[EARLY:.*]] = arith.cmpi slt, %kt, %[[NINETEEN]] : index
// CHECK-NEXT:      %[[PERIOD:.*]] = arith.constant 18 : index
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[PHASE:.*]] = arith.remui %kt, %[[PERIOD]] : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi eq, %[[PHASE]], %[[ZERO]] : index
// CHECK-NEXT:      %[[BOTH:.*]] = arith.andi %[[EARLY]], %[[FIRST]] : i1
// CHECK-NEXT:      scf.if %[[BOTH]] {
// CHECK:             sync.wait %sems_conv1[
// CHECK:           sync.load_point operand 0 [%r, %c] step %kt {sync.filled}
// CHECK: sync.stage @conv2 {{.*}}sync.verified = "proved"

// -----

// Where the tiles read follow the step (a GEMM's k-step s0 reads column tile s0) under
// TileSync, every step waits, unguarded (RowSync waits at step 0: one row semaphore).
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm1(%a: memref<?xf16>, %h: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @gemm2(%h: memref<?xf16>, %y: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %kt = %c0 to %c4 step %c1 {
        sync.load_point operand 0 [%r, %c] step %kt
      }
      gpu.return
    }
  }
  sync.stage @gemm1 {kernel = @k::@gemm1, grid = array<i64: 8, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @gemm2 {kernel = @k::@gemm2, grid = array<i64: 8, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
  sync.launch @gemm1 {priority = -1 : i64}
  sync.launch @gemm2 {pdl = true}
}

// CHECK-LABEL: gpu.func @gemm2(
// CHECK:         scf.for %kt = %c0 to %c4 step %c1 {
// CHECK-NEXT:      sync.wait %sems_gemm1[%r, %kt]
// CHECK-NEXT:      sync.load_point operand 0 [%r, %c] step %kt {sync.filled}
// CHECK: sync.stage @gemm2 {{.*}}sync.verified = "proved"

// -----

// An MLP's GEMM2 whose k-steps of 64 read GEMM1's 128-wide H tiles, from step 2 (the range
// starts there): a new H tile at steps 2, 4 and 6 (offsets 0, 2, 4), the last one at the
// range's last step, so the waits run every second step from the start, with no early bound.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm1(%a: memref<?xf16>, %h: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @gemm2(%h: memref<?xf16>, %y: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c7 = arith.constant 7 : index
      scf.for %kt = %c2 to %c7 step %c1 {
        sync.load_point operand 0 [%r, %c] step %kt
      }
      gpu.return
    }
  }
  sync.stage @gemm1 {kernel = @k::@gemm1, grid = array<i64: 8, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 128>}
  sync.stage @gemm2 {kernel = @k::@gemm2, grid = array<i64: 8, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0 floordiv 2) forall s0 in [2, 7)
  sync.launch @gemm1 {priority = -1 : i64}
  sync.launch @gemm2 {pdl = true}
}

// CHECK-LABEL: gpu.func @gemm2(
// CHECK:         scf.for %kt = %c2 to %c7 step %c1 {
// CHECK-NEXT:      %[[START:.*]] = arith.constant 2 : index
// CHECK-NEXT:      %[[OFFSET:.*]] = arith.subi %kt, %[[START]] : index
// CHECK-NEXT:      %[[PERIOD:.*]] = arith.constant 2 : index
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[PHASE:.*]] = arith.remui %[[OFFSET]], %[[PERIOD]] : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi eq, %[[PHASE]], %[[ZERO]] : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        %[[COLUMN:.*]] = affine.apply affine_map<(d0, d1)[s0] -> ((s0 floordiv 2))> (%r, %c)[%kt]
// CHECK-NEXT:        sync.wait %sems_gemm1[%r, %[[COLUMN]]]
// CHECK-NEXT:      }
// CHECK-NEXT:      sync.load_point operand 0 [%r, %c] step %kt {sync.filled}
// CHECK: sync.stage @gemm2 {{.*}}sync.verified = "proved"
