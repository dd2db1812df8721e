// RUN: tilesync-opt %s -p sync-insert-post-wait --verify-diagnostics | filecheck %s

// Without sync-generate-policies first, the producer has no semaphore layout.
gpu.module @k {
  gpu.func @p(%c: memref<?xf32>) kernel {
    %x, %y = sync.tile : index, index
    sync.store_point [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @c {kernel = @k::@p, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)

// CHECK: insert_post_wait_no_policy.mlir:11:1: sync-insert-post-wait: stage @p is read by other stages but has no policy; run sync-generate-policies (or sync-select-policy) first
