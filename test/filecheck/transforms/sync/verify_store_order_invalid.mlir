// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-insert-post-wait,sync-verify{sms=4}' --verify-diagnostics | filecheck %s
// Producers whose posts would not cover what their consumers read: each refused at the store.

// The store point above the tile's store: the post would release the semaphore before the
// data is written, and a consumer's acquire could see the post and read the old value.
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      %v = memref.load %in[%i] : memref<?xf32>
      sync.store_point [%t]
      memref.store %v, %out[%i] : memref<?xf32>
      gpu.return
    }
    gpu.func @c(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_store_order_invalid.mlir:14:7: sync-verify: producer tile (0,) of @p: 'memref.store' writes argument 1 (read by its consumers) after the tile's sync.post: a consumer could see the post before the data (post after the tile's last store)

// -----

// The producer writes through a memref of unknown shape, the consumer reads a static one of
// the same elements (one buffer to the runtime): the producer's writes are still placed in
// its tiles. Tile t writes the other tile's half, so consumer tile t would wait for producer
// tile t and read what tile 1 - t writes.
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<128xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %other = arith.subi %c1, %t : index
      %i = arith.muli %other, %c64 : index
      %v = memref.load %in[%i] : memref<128xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
    gpu.func @c(%in: memref<128xf32>, %out: memref<128xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<128xf32>
      memref.store %v, %out[%i] : memref<128xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_store_order_invalid.mlir:51:7: sync-verify: producer tile (0,) of @p: 'memref.store' writes argument 1 at [64, 64], outside [0, 64), the region of it its consumers wait for tile (0,) to have written (the stage's tile (64,) over the operand's layout)
