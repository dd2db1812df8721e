// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-insert-post-wait,sync-verify{sms=4}' | filecheck %s
// Producers whose output_map places their tiles in the buffer their consumers read.

// A batched producer: its grid's z is the batch of a [B, M, N] output (tile (x, y, z) writes
// out[z, 4x .. 4x+3, 4y .. 4y+3]), and the consumer reads a batch's 4x4 block the same way.
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
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2, 3>, block = array<i64: 16>, tile = array<i64: 4, 4, 1>, output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1)>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2, 3>, block = array<i64: 16>, tile = array<i64: 4, 4, 1>, output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1)>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1, d2) -> (d0, d1, d2)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync.stage @p {{.*}}output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK: sync.stage @c {{.*}}sync.verified = "proved"

// -----

// Two producers write disjoint columns of one buffer (Q and K into QK): @k's tiles start at
// column 8. The consumer's tile t reads row block t of both halves and waits on both.
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
      %v = memref.load %qk[%m, %c] : memref<8x16xf32>
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
// CHECK: sync.stage @kk {{.*}}output_map = affine_map<(d0, d1) -> (d0, (d1 + 8))>
// CHECK: sync.stage @c {{.*}}sync.verified = "proved"
