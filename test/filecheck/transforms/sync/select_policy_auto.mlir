// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-select-policy{policy=auto sms=132}' | filecheck %s
// `auto` by the wave model: TileSync where one shared row spans half a wave or more and the
// consumer loads step by step; the generated RowSync otherwise (or without occupancy).

builtin.module {
  gpu.module @m {
    gpu.func @producer(%out: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %steps = arith.constant 96 : index
      scf.for %k = %c0 to %steps step %c1 {
        sync.load_point operand 0 [%x, %y] step %k
      }
      gpu.return
    }
  }
  // 2 rows of 96 tiles, 1 block per SM: a row is 96 of a 132-block wave
  sync.stage @p {blocks_per_sm = 1 : i64, kernel = @m::@producer, grid = array<i64: 2, 96>, block = array<i64: 128>, tile = array<i64: 128, 128>}
  sync.stage @c {kernel = @m::@consumer, grid = array<i64: 2, 8>, block = array<i64: 128>, tile = array<i64: 128, 128>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 96)
}
// CHECK: sync.stage @p {{.*}}policy = #sync.policy<TileSync (d0, d1) -> (d0 * 96 + d1), posts = 1>

// -----

builtin.module {
  gpu.module @m {
    gpu.func @producer(%out: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %steps = arith.constant 48 : index
      scf.for %k = %c0 to %steps step %c1 {
        sync.load_point operand 0 [%x, %y] step %k
      }
      gpu.return
    }
  }
  // 16 rows of 48 tiles, 2 blocks per SM: a row is 48 of a 264-block wave
  sync.stage @p {blocks_per_sm = 2 : i64, kernel = @m::@producer, grid = array<i64: 16, 48>, block = array<i64: 128>, tile = array<i64: 128, 128>}
  sync.stage @c {kernel = @m::@consumer, grid = array<i64: 16, 8>, block = array<i64: 128>, tile = array<i64: 128, 128>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
}
// CHECK: sync.stage @p {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>

// -----

builtin.module {
  gpu.module @m {
    gpu.func @producer(%out: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      gpu.return
    }
  }
  // long rows, but the consumer waits for the whole row at once: no gain from TileSync
  sync.stage @p {blocks_per_sm = 1 : i64, kernel = @m::@producer, grid = array<i64: 2, 96>, block = array<i64: 128>, tile = array<i64: 128, 128>}
  sync.stage @c {kernel = @m::@consumer, grid = array<i64: 2, 8>, block = array<i64: 128>, tile = array<i64: 128, 128>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 96)
}
// CHECK: sync.stage @p {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 96>
