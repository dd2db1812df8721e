// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-insert-post-wait,sync-verify{sms=4}' --verify-diagnostics | filecheck %s
// Guards and casts as the abstract run reads them: an unsigned comparison is decided only where
// the signs tell, a truncation keeps only a range its type holds, and a row of dynamic length
// cannot be indexed (its end is unknown).

// -----

// The unsigned range check of a conv's left neighbour (c - 1 <u 8 holds only for c >= 1):
// the read inside is of columns 0..6 of the consumer's own rows. Proved.
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
      sync.load_point operand 0 [%x, %y]
      %left = arith.subi %c, %c1 : index
      %g = arith.cmpi ult, %left, %c8 : index
      scf.if %g {
        %a = memref.load %in[%m, %left] : memref<8x8xf32>
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

// The same check's else side runs where c - 1 = -1 (as unsigned, past 8): it reads row m + 4,
// another tile's, which nothing waits for. (The unsigned comparison was decided as a signed
// one, the else side never checked.)
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
      sync.load_point operand 0 [%x, %y]
      %left = arith.subi %c, %c1 : index
      %g = arith.cmpi ult, %left, %c8 : index
      scf.if %g {
      } else {
        %n = arith.addi %m, %c4 : index
        %a = memref.load %in[%n, %c] : memref<8x8xf32>
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
// CHECK: verify_guards.mlir:95:9: sync-verify: consumer tile (0, 0) of @c: 'memref.load' reads operand 0 at [4, 7], [0, 7], where producer tile (1, 0) of @p wrote [4, 8) x [0, 8)

// -----

// A branch on a value truncated to i3: columns 4..7 wrap to -4..-1 and take it, reading row
// m + 4. (The truncation kept the range, the branch was decided never taken.)
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
      sync.load_point operand 0 [%x, %y]
      %b = arith.index_cast %c : index to i32
      %b3 = arith.trunci %b : i32 to i3
      %z3 = arith.constant 0 : i3
      %g = arith.cmpi slt, %b3, %z3 : i3
      scf.if %g {
        %n = arith.addi %m, %c4 : index
        %a = memref.load %in[%n, %c] : memref<8x8xf32>
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
// CHECK: verify_guards.mlir:149:9: sync-verify: consumer tile (0, 0) of @c: 'memref.load' reads operand 0 at [4, 7], [0, 7], where producer tile (1, 0) of @p wrote [4, 8) x [0, 8)

// -----

// A row of dynamic length read at column c + 8: past the row's end is the next row's element,
// whose writer cannot be told.
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
    gpu.func @c(%in: memref<?x?xf32>, %out: memref<8x8xf32>) kernel {
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
      sync.load_point operand 0 [%x, %y]
      %cc = arith.addi %c, %c8 : index
      %a = memref.load %in[%m, %cc] : memref<?x?xf32>
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
// CHECK: verify_guards.mlir:198:7: sync-verify: consumer @c: 'memref.load' indexes dimension 1 of operand 0, whose size is dynamic (memref<?x?xf32>)

// -----

// A guard joining a per-tile condition and a per-thread one (`32 y - 1 <u 64 and t < 16`):
// for the tiles with y = 0 the first is false, so the and is, whatever the thread: those tiles
// never load column -1. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<8x64xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %y32 = arith.muli %y, %c32 : index
      %col = arith.addi %y32, %t : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%x, %col] : memref<8x64xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%in: memref<8x64xf32>, %out: memref<8x64xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %y32 = arith.muli %y, %c32 : index
      %col = arith.addi %y32, %t : index
      %left = arith.subi %col, %c32 : index
      sync.load_point operand 0 [%x, %y]
      %lc = arith.subi %y32, %c1 : index
      %c64 = arith.constant 64 : index
      %has_left = arith.cmpi ult, %lc, %c64 : index
      %lane_ok = arith.cmpi ult, %t, %c16 : index
      %ok = arith.andi %has_left, %lane_ok : i1
      scf.if %ok {
        %v = memref.load %in[%x, %lc] : memref<8x64xf32>
        memref.store %v, %out[%x, %col] : memref<8x64xf32>
      }
      sync.store_point [%x, %y]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 8, 2>, block = array<i64: 32>, tile = array<i64: 1, 32>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8, 2>, block = array<i64: 32>, tile = array<i64: 1, 32>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 - 1) forall s0 in [0, 2) clipped
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync.stage @c {{.*}}sync.verified = "proved"

// -----

// The same guard as its negation, `32 y - 1 >=u 64 or t >= 16`, the load on the false side:
// the or is true for every thread of the tiles with y = 0. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<8x64xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %y32 = arith.muli %y, %c32 : index
      %col = arith.addi %y32, %t : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%x, %col] : memref<8x64xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%in: memref<8x64xf32>, %out: memref<8x64xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %y32 = arith.muli %y, %c32 : index
      %col = arith.addi %y32, %t : index
      %left = arith.subi %col, %c32 : index
      sync.load_point operand 0 [%x, %y]
      %lc = arith.subi %y32, %c1 : index
      %c64 = arith.constant 64 : index
      %no_left = arith.cmpi uge, %lc, %c64 : index
      %lane_off = arith.cmpi uge, %t, %c16 : index
      %skip = arith.ori %no_left, %lane_off : i1
      scf.if %skip {
      } else {
        %v = memref.load %in[%x, %lc] : memref<8x64xf32>
        memref.store %v, %out[%x, %col] : memref<8x64xf32>
      }
      sync.store_point [%x, %y]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 8, 2>, block = array<i64: 32>, tile = array<i64: 1, 32>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8, 2>, block = array<i64: 32>, tile = array<i64: 1, 32>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 - 1) forall s0 in [0, 2) clipped
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync.stage @c {{.*}}sync.verified = "proved"

// -----

// `32 y - 1 <u 64 or t < 16` holds for some threads of the tiles with y = 0, which then read
// column -1: refused.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<8x64xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %y32 = arith.muli %y, %c32 : index
      %col = arith.addi %y32, %t : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%x, %col] : memref<8x64xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%in: memref<8x64xf32>, %out: memref<8x64xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %y32 = arith.muli %y, %c32 : index
      %col = arith.addi %y32, %t : index
      %left = arith.subi %col, %c32 : index
      sync.load_point operand 0 [%x, %y]
      %lc = arith.subi %y32, %c1 : index
      %c64 = arith.constant 64 : index
      %has_left = arith.cmpi ult, %lc, %c64 : index
      %lane_ok = arith.cmpi ult, %t, %c16 : index
      %ok = arith.ori %has_left, %lane_ok : i1
      scf.if %ok {
        %v = memref.load %in[%x, %lc] : memref<8x64xf32>
        memref.store %v, %out[%x, %col] : memref<8x64xf32>
      }
      sync.store_point [%x, %y]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 8, 2>, block = array<i64: 32>, tile = array<i64: 1, 32>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8, 2>, block = array<i64: 32>, tile = array<i64: 1, 32>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 - 1) forall s0 in [0, 2) clipped
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_guards.mlir:344:9: sync-verify: consumer @c: 'memref.load' may touch index [-1, -1] of dimension 1 of operand 0, outside its shape [8, 64]
