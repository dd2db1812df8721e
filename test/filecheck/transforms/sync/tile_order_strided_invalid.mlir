// RUN: tilesync-opt %s -p 'sync-tile-order{order=strided}' --verify-diagnostics | filecheck %s

// order=strided needs a dependency that reads producer columns a constant stride apart;
// a RowSync-like read of adjacent columns has none.
builtin.module {
  sync.stage @mlp1 {kernel = @kernels::@gemm, grid = array<i64: 4, 48>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>}
  sync.stage @mlp2 {kernel = @kernels::@gemm, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>}
  sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
}
// CHECK: sync-tile-order: order=strided, but no sync.dependency reads producer columns a constant stride (> 1) apart
