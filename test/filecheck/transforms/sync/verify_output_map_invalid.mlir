// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-insert-post-wait,sync-verify{sms=4}' --verify-diagnostics | filecheck %s
// Producers whose tiles the buffer's layout does not place where they write: refused.

// The batched producer of verify_output_map.mlir without its output_map: index 0 of the
// buffer (the batch) would be the grid's x and index 2 its z: tile (0, 0, 0) writes columns
// [0, 4) of index 2, where its region has one.
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<3x8x8xf32>, %out: memref<3x8x8xf32>) kernel {
      %x, %y, %z = sync.tile : index, index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %r = arith.divui %t, %c4 : index
      %c = arith.remui %t, %c4 : index
      %x4 = arith.muli %x, %c4 : index
      %y4 = arith.muli %y, %c4 : index
      %m = arith.addi %x4, %r : index
      %n = arith.addi %y4, %c : index
      %v = memref.load %in[%z, %m, %n] : memref<3x8x8xf32>
      memref.store %v, %out[%z, %m, %n] : memref<3x8x8xf32>
      sync.store_point [%x, %y, %z]
      gpu.return
    }
    gpu.func @c(%in: memref<3x8x8xf32>, %out: memref<3x8x8xf32>) kernel {
      %x, %y, %z = sync.tile : index, index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %r = arith.divui %t, %c4 : index
      %c = arith.remui %t, %c4 : index
      %x4 = arith.muli %x, %c4 : index
      %y4 = arith.muli %y, %c4 : index
      %m = arith.addi %x4, %r : index
      %n = arith.addi %y4, %c : index
      sync.load_point operand 0 [%x, %y, %z]
      %v = memref.load %in[%z, %m, %n] : memref<3x8x8xf32>
      memref.store %v, %out[%z, %m, %n] : memref<3x8x8xf32>
      sync.store_point [%x, %y, %z]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2, 3>, block = array<i64: 16>, tile = array<i64: 4, 4, 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2, 3>, block = array<i64: 16>, tile = array<i64: 4, 4, 1>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1, d2) -> (d0, d1, d2)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_output_map_invalid.mlir:20:7: sync-verify: producer tile (0, 0, 0) of @p: 'memref.store' writes argument 1 at [0, 0], [0, 3], [0, 3], outside [0, 4) x [0, 4) x [0, 1), the region of it its consumers wait for tile (0, 0, 0) to have written

// -----

// A map four columns off: tile (x, y, z) would write columns [4y + 4, 4y + 8) of batch z, and
// the producer writes [4y, 4y + 4).
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<3x8x8xf32>, %out: memref<3x8x8xf32>) kernel {
      %x, %y, %z = sync.tile : index, index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %r = arith.divui %t, %c4 : index
      %c = arith.remui %t, %c4 : index
      %x4 = arith.muli %x, %c4 : index
      %y4 = arith.muli %y, %c4 : index
      %m = arith.addi %x4, %r : index
      %n = arith.addi %y4, %c : index
      %v = memref.load %in[%z, %m, %n] : memref<3x8x8xf32>
      memref.store %v, %out[%z, %m, %n] : memref<3x8x8xf32>
      sync.store_point [%x, %y, %z]
      gpu.return
    }
    gpu.func @c(%in: memref<3x8x8xf32>, %out: memref<3x8x8xf32>) kernel {
      %x, %y, %z = sync.tile : index, index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %r = arith.divui %t, %c4 : index
      %c = arith.remui %t, %c4 : index
      %x4 = arith.muli %x, %c4 : index
      %y4 = arith.muli %y, %c4 : index
      %m = arith.addi %x4, %r : index
      %n = arith.addi %y4, %c : index
      sync.load_point operand 0 [%x, %y, %z]
      %v = memref.load %in[%z, %m, %n] : memref<3x8x8xf32>
      memref.store %v, %out[%z, %m, %n] : memref<3x8x8xf32>
      sync.store_point [%x, %y, %z]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2, 3>, block = array<i64: 16>, tile = array<i64: 4, 4, 1>, output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1 + 4)>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2, 3>, block = array<i64: 16>, tile = array<i64: 4, 4, 1>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1, d2) -> (d0, d1, d2)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_output_map_invalid.mlir:66:7: sync-verify: producer tile (0, 0, 0) of @p: 'memref.store' writes argument 1 at [0, 0], [0, 3], [0, 3], outside [0, 1) x [0, 4) x [4, 8)

// -----

// The consumer reads the buffer one row block down (rows the other tiles of @q and @kk write)
// while its dependencies wait only for its own row block.
builtin.module {
  gpu.module @k {
    gpu.func @q(%in: memref<8x8xf32>, %out: memref<8x16xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %x4 = arith.muli %x, %c4 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %m = arith.addi %x4, %r : index
      %v = memref.load %in[%m, %c] : memref<8x8xf32>
      memref.store %v, %out[%m, %c] : memref<8x16xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @k(%in: memref<8x8xf32>, %out: memref<8x16xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %x4 = arith.muli %x, %c4 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %m = arith.addi %x4, %r : index
      %n = arith.addi %c, %c8 : index
      %v = memref.load %in[%m, %c] : memref<8x8xf32>
      memref.store %v, %out[%m, %n] : memref<8x16xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%qk: memref<8x16xf32>, %out: memref<8x16xf32>) kernel {
      %x = sync.tile : index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %x4 = arith.muli %x, %c4 : index
      %r = arith.divui %t, %c16 : index
      %c = arith.remui %t, %c16 : index
      %m = arith.addi %x4, %r : index
      sync.load_point operand 0 [%x]
      %c8 = arith.constant 8 : index
      %below = arith.addi %m, %c4 : index
      %wrapped = arith.remui %below, %c8 : index
      %v = memref.load %qk[%wrapped, %c] : memref<8x16xf32>
      memref.store %v, %out[%m, %c] : memref<8x16xf32>
      sync.store_point [%x]
      gpu.return
    }
  }
  sync.stage @q {kernel = @k::@q, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>}
  sync.stage @kk {kernel = @k::@k, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>, output_map = affine_map<(d0, d1) -> (d0, d1 + 8)>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 4>}
  sync.dependency @q -> @c operand 0 tiles (d0) -> (d0, 0)
  sync.dependency @kk -> @c operand 0 tiles (d0) -> (d0, 0)
  sync.launch @q
  sync.launch @kk
  sync.launch @c
}
// CHECK: verify_output_map_invalid.mlir:143:7: sync-verify: consumer tile (0,) of @c: 'memref.load' reads operand 0 at [4, 7], [0, 15], where producer tile (1, 0) of @q wrote [4, 8) x [0, 8) (a tile its sync.dependency does not declare; semaphore 1), but no wait on that semaphore precedes it

// -----

// A consumer viewing the batched buffer flat: the output_map places the tiles in 3
// dimensions, so a rank-1 view has no map.
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<3x8x8xf32>, %out: memref<3x8x8xf32>) kernel {
      %x, %y, %z = sync.tile : index, index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %r = arith.divui %t, %c4 : index
      %c = arith.remui %t, %c4 : index
      %x4 = arith.muli %x, %c4 : index
      %y4 = arith.muli %y, %c4 : index
      %m = arith.addi %x4, %r : index
      %n = arith.addi %y4, %c : index
      %v = memref.load %in[%z, %m, %n] : memref<3x8x8xf32>
      memref.store %v, %out[%z, %m, %n] : memref<3x8x8xf32>
      sync.store_point [%x, %y, %z]
      gpu.return
    }
    gpu.func @c(%in: memref<192xf32>, %out: memref<3x8x8xf32>) kernel {
      %x, %y, %z = sync.tile : index, index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %r = arith.divui %t, %c4 : index
      %c = arith.remui %t, %c4 : index
      %x4 = arith.muli %x, %c4 : index
      %y4 = arith.muli %y, %c4 : index
      %m = arith.addi %x4, %r : index
      %n = arith.addi %y4, %c : index
      sync.load_point operand 0 [%x, %y, %z]
      %v = memref.load %in[%n] : memref<192xf32>
      memref.store %v, %out[%z, %m, %n] : memref<3x8x8xf32>
      sync.store_point [%x, %y, %z]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2, 3>, block = array<i64: 16>, tile = array<i64: 4, 4, 1>, output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1)>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2, 3>, block = array<i64: 16>, tile = array<i64: 4, 4, 1>, output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1)>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1, d2) -> (d0, d1, d2)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_output_map_invalid.mlir:192:7: sync-verify: consumer @c: 'memref.load' reads operand 0, but its type memref<192xf32> has rank 1 while @p's output_map places its tiles in 3 dimensions
