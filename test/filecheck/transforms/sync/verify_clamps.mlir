// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-insert-post-wait,sync-verify{sms=4}' --verify-diagnostics | filecheck %s
// Clamps and inequality guards as the abstract run reads them: a select's operands are narrowed
// by its condition, an `x != n` guard moves an end of x's range that equals n.

// -----

// The right neighbour's column clamped by a select (`c + 1 < 8 ? c + 1 : 7`): columns 1..7 of
// the consumer's own rows. Proved (the select's range was the hull of c + 1, up to 8, and 7).
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
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      sync.load_point operand 0 [%x, %y]
      %right = arith.addi %c, %c1 : index
      %in_row = arith.cmpi slt, %right, %c8 : index
      %clamped = arith.select %in_row, %right, %c7 : index
      %a = memref.load %in[%m, %clamped] : memref<8x8xf32>
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

// The clamp written the other way round (`c + 1 >= 8 ? 7 : c + 1`). Proved.
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
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      sync.load_point operand 0 [%x, %y]
      %right = arith.addi %c, %c1 : index
      %past = arith.cmpi sge, %right, %c8 : index
      %clamped = arith.select %past, %c7, %right : index
      %a = memref.load %in[%m, %clamped] : memref<8x8xf32>
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

// A clamp to the column past the end (`c + 1 < 8 ? c + 1 : 8`) still reads it.
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
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      sync.load_point operand 0 [%x, %y]
      %right = arith.addi %c, %c1 : index
      %in_row = arith.cmpi slt, %right, %c8 : index
      %clamped = arith.select %in_row, %right, %c8 : index
      %a = memref.load %in[%m, %clamped] : memref<8x8xf32>
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
// CHECK: verify_clamps.mlir:138:7: sync-verify: consumer @c: 'memref.load' may touch index [1, 8] of dimension 1 of operand 0, outside its shape [8, 8]

// -----

// The row below clamped to row 7 (`m + 1 < 8 ? m + 1 : 7`): tile 0's last row reads row 4, tile
// 1's, which nothing waits for.
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
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      sync.load_point operand 0 [%x, %y]
      %below = arith.addi %m, %c1 : index
      %in_col = arith.cmpi slt, %below, %c8 : index
      %clamped = arith.select %in_col, %below, %c7 : index
      %a = memref.load %in[%clamped, %c] : memref<8x8xf32>
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
// CHECK: verify_clamps.mlir:188:7: sync-verify: consumer tile (0, 0) of @c: 'memref.load' reads operand 0 at [1, 4], [0, 7], where producer tile (1, 0) of @p wrote [4, 8) x [0, 8)

// -----

// A `c != 7` guard around the read of column c + 1: columns 1..7. Proved.
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
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      sync.load_point operand 0 [%x, %y]
      %not_last = arith.cmpi ne, %c, %c7 : index
      scf.if %not_last {
        %right = arith.addi %c, %c1 : index
        %a = memref.load %in[%m, %right] : memref<8x8xf32>
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

// The same guard's else side (`c == 7`) reading column c + 1, past the row's end.
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
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %r = arith.divui %t, %c8 : index
      %c = arith.remui %t, %c8 : index
      %x4 = arith.muli %x, %c4 : index
      %m = arith.addi %x4, %r : index
      sync.load_point operand 0 [%x, %y]
      %last = arith.cmpi eq, %c, %c7 : index
      scf.if %last {
        %right = arith.addi %c, %c1 : index
        %a = memref.load %in[%m, %right] : memref<8x8xf32>
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
// CHECK: verify_clamps.mlir:287:9: sync-verify: consumer @c: 'memref.load' may touch index [8, 8] of dimension 1 of operand 0, outside its shape [8, 8]
