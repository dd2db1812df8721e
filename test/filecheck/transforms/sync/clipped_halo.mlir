// RUN: tilesync-opt %s -p sync-generate-policies,sync-insert-post-wait,sync-verify | filecheck %s
// RUN: tilesync-opt %s | tilesync-opt | filecheck %s --check-prefix=ROUNDTRIP
// A 3×3 convolution chain: output row tile r of conv2 reads rows r-1, r, r+1 of conv1's
// output; at the image border the missing rows are zero padding, so the dependency is
// `clipped` (no padded producer grid needed). Waits on rows outside the grid are guarded away.

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

// ROUNDTRIP: sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s0 + -1, s1) forall s0 in [0, 3), s1 in [0, 4) clipped

// Whole rows are read: conv1 gets RowSync; each of the three row waits is guarded by the grid.
// CHECK:      gpu.func @conv_conv2(
// CHECK:        scf.for %s0 =
// CHECK:          %[[ROW:.*]] = affine.apply
// CHECK:          arith.cmpi sge, %[[ROW]]
// CHECK:          arith.andi
// CHECK:          scf.if %{{.*}} {
// CHECK-NEXT:       sync.wait %{{.*}}[%[[ROW]], %{{.*}}] epoch %{{.*}} policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>
// CHECK:      sync.stage @conv1 {{.*}}sync.verified = "proved"{{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>
// CHECK:      sync.stage @conv2 {{.*}}sync.progress = "@conv1: programmatic dependent launch", sync.verified = "proved"
