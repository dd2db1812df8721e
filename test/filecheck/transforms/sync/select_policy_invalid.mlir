// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-select-policy{policy=row}' --verify-diagnostics | filecheck %s --check-prefix=ROW
// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-select-policy{policy=strided}' --verify-diagnostics | filecheck %s --check-prefix=STRIDED
// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-select-policy{policy=strided stride=5}' --verify-diagnostics | filecheck %s --check-prefix=STRIDE5

// A 1-D producer has no row to share.
sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 64>}
sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)

// ROW: select_policy_invalid.mlir:6:1: sync-select-policy: policy=row is not legal for @a: its grid (8,) has no column dimension to share
// STRIDED: sync-select-policy: policy=strided is not legal for @a: its grid (8,) has no column dimension to share
// STRIDE5: sync-select-policy: policy=strided is not legal for @a: its grid (8,) has no column dimension to share

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 8>, block = array<i64: 128>, tile = array<i64: 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 8>, block = array<i64: 128>, tile = array<i64: 64>}
sync.dependency @a -> @b operand 0 tiles (d0, d1) -> (d0, d1)

// ROW: sync.stage @a {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>}
// STRIDED: select_policy_invalid.mlir:16:1: sync-select-policy: policy=strided is not legal for @a: no stride given (stride=N) and the generated policy TileSync is not strided
// STRIDE5: sync-select-policy: policy=strided is not legal for @a: stride 5 does not divide its 8 column tiles into groups of at least 2

// -----

// A stride as wide as the grid leaves groups of one tile (TileSync under another name).
sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 5>, block = array<i64: 128>, tile = array<i64: 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 5>, block = array<i64: 128>, tile = array<i64: 64>}
sync.dependency @a -> @b operand 0 tiles (d0, d1) -> (d0, d1)

// ROW: sync.stage @a {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 5>}
// STRIDED: sync-select-policy: policy=strided is not legal for @a: no stride given (stride=N) and the generated policy TileSync is not strided
// STRIDE5: sync-select-policy: policy=strided is not legal for @a: stride 5 does not divide its 5 column tiles into groups of at least 2
