// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-insert-post-wait,sync-verify{sms=4}' --verify-diagnostics | filecheck %s
// Row-major, an index past the end of a dimension after the first is another element of the
// buffer (column 8 of row r is column 0 of row r + 1), which no tile map places: an access that
// may go there is refused, unless masked or guarded. A guard (`scf.if` on a comparison of the
// index, or two joined by `arith.andi`) bounds the index where it holds.

// Guarded: the consumer reads columns c - 1 and c + 1 of its own row block where they lie
// inside the row (a 3-wide stencil along the row), its dependency covering the row block.
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<8x8xf32>, %out: memref<8x8xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      %v = memref.load %in[%m, %c] : memref<8x8xf32>
      memref.store %v, %out[%m, %c] : memref<8x8xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%in: memref<8x8xf32>, %out: memref<8x8xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      %left = arith.subi %c, %c1 : index
      %right = arith.addi %c, %c1 : index
      sync.load_point operand 0 [%x, %y]
      %has_left = arith.cmpi sge, %left, %c0 : index
      scf.if %has_left {
        %a = memref.load %in[%m, %left] : memref<8x8xf32>
      }
      %above = arith.cmpi sge, %right, %c0 : index
      %below = arith.cmpi slt, %right, %c8 : index
      %has_right = arith.andi %above, %below : i1
      scf.if %has_right {
        %b = memref.load %in[%m, %right] : memref<8x8xf32>
      } else {
        %z = memref.load %in[%m, %c] : memref<8x8xf32>
      }
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%m, %c] : memref<8x8xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync.stage @c {{.*}}sync.verified = "proved"

// -----

// Unguarded, the read of column c + 1 goes past the row's end (column 8 of row r: row r + 1's
// column 0, and for the last row of a block the next block's, written by the other tile).
builtin.module {
  gpu.module @k {
    gpu.func @c(%in: memref<8x8xf32>, %out: memref<8x8xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      %right = arith.addi %c, %c1 : index
      sync.load_point operand 0 [%x, %y]
      %b = memref.load %in[%m, %right] : memref<8x8xf32>
      memref.store %b, %out[%m, %c] : memref<8x8xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@c, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_bounds.mlir:83:7: sync-verify: consumer @c: 'memref.load' may touch index [1, 8] of dimension 1 of operand 0, outside its shape [8, 8]: past the end of a row that is another element of the buffer, which sync-verify cannot place in a tile (mask or guard the access to keep it inside)

// -----

// A producer whose tiles reach past its rows' end: its 4 x 8 tiles in an 8 x 4 buffer store
// columns 4 .. 7 into the next row.
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<8x8xf32>, %out: memref<8x4xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      %v = memref.load %in[%m, %c] : memref<8x8xf32>
      memref.store %v, %out[%m, %c] : memref<8x4xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%in: memref<8x4xf32>, %out: memref<8x4xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      sync.load_point operand 0 [%x, %y]
      %v = memref.load %in[%x, %c0] : memref<8x4xf32>
      memref.store %v, %out[%x, %c0] : memref<8x4xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_bounds.mlir:113:7: sync-verify: producer @p, tile (0, 0): 'memref.store' may touch index [0, 7] of dimension 1 of operand 1, outside its shape [8, 4]

// -----

// A view of the same rank with other rows: @p writes an 8 x 8 buffer, @c reads it as 16 x 4,
// where its row 8 is @p's row 4 (tile (1, 0)): an index names another element in each view.
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<8x8xf32>, %out: memref<8x8xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %x4 = arith.muli %x, %c4 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %m = arith.addi %x4, %r : index
      %v = memref.load %in[%m, %c] : memref<8x8xf32>
      memref.store %v, %out[%m, %c] : memref<8x8xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%buf: memref<16x4xf32>, %out: memref<16x4xf32>) kernel {
      %x = sync.tile : index
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c4 : index
      %c = arith.remui %t, %c4 : index
      %m = arith.addi %r, %c8 : index
      sync.load_point operand 0 [%x]
      %v = memref.load %buf[%m, %c] : memref<16x4xf32>
      memref.store %v, %out[%m, %c] : memref<16x4xf32>
      sync.store_point [%x]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 1>, block = array<i64: 32>, tile = array<i64: 4, 8>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 32>, tile = array<i64: 8>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (0, 0)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync-verify: producer @p writes argument 1 as memref<8x8xf32>, which a consumer reads as memref<16x4xf32>: a view of the same rank but other rows maps other elements to the same indices
