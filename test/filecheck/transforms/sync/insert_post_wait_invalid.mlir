// RUN: tilesync-opt %s -p sync-generate-policies,sync-insert-post-wait --split-input-file --verify-diagnostics | filecheck %s

// The consumer's kernel never says where it loads operand 1, which @v writes: refused, not
// left unsynchronized (the reference cuSync only ever guarded operand A).
gpu.module @k {
  gpu.func @p(%c: memref<?xf32>) kernel {
    %x, %y = sync.tile : index, index
    sync.store_point [%x, %y]
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
    %x, %y = sync.tile : index, index
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @u {kernel = @k::@p, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @v {kernel = @k::@p, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @u -> @c operand 0 tiles (d0, d1) -> (d0, d1)
sync.dependency @v -> @c operand 1 tiles (d0, d1) -> (d1, d0)

// CHECK: insert_post_wait_invalid.mlir:21:1: sync-insert-post-wait: kernel @k::@c of stage @c has no sync.load_point operand 1, but stage @v writes that operand: the kernel would read it unsynchronized

// -----

// A producer kernel without a store hook: its consumers would wait forever.
gpu.module @k {
  gpu.func @p(%c: memref<?xf32>) kernel {
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>) kernel {
    %x, %y = sync.tile : index, index
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)

// CHECK: insert_post_wait_invalid.mlir:38:1: sync-insert-post-wait: kernel @k::@p of stage @p has no sync.store_point, but @c read its tiles and would wait forever

// -----

// A load hook with the wrong number of tile coordinates for its stage.
gpu.module @k {
  gpu.func @p(%c: memref<?xf32>) kernel {
    %x, %y = sync.tile : index, index
    sync.store_point [%x, %y]
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>) kernel {
    %x, %y = sync.tile : index, index
    sync.load_point operand 0 [%x]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)

// CHECK: insert_post_wait_invalid.mlir:55:5: sync-insert-post-wait: in kernel @k::@c of stage @c, sync.load_point operand 0 gives 1 tile coordinates but the stage has a 2-D grid
