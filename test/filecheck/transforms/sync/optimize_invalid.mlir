// RUN: tilesync-opt %s -p sync-drop-wait-kernel --split-input-file --verify-diagnostics | filecheck %s --check-prefix=W
// RUN: tilesync-opt %s -p sync-drop-tile-order --split-input-file --verify-diagnostics | filecheck %s --check-prefix=T

// No blocks_per_sm on the stages: both passes refuse to guess.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>, order = #sync.order<column_major>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
// W: sync-drop-wait-kernel: stage @p has no 'blocks_per_sm' attribute; run sync-annotate-occupancy first (after the driver records 'registers' and 'shared_bytes'), this pass does not guess an occupancy
// T: sync-drop-tile-order: stage @c has no 'blocks_per_sm' attribute; run sync-annotate-occupancy first

// -----

// Annotated for 108 SMs (8 / 216 waves) but optimized for the default 132: refused.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>, blocks_per_sm = 2 : i64, waves = 0.037037037037037035 : f64}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>, blocks_per_sm = 2 : i64, waves = 0.037037037037037035 : f64, order = #sync.order<column_major>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
// W: sync-drop-wait-kernel: stage @p was annotated with waves = 0.037037, but 8 blocks on 132 SMs x 2 per SM are 0.030303 waves: the SM count differs from the annotation's
// T: sync-drop-tile-order: stage @c was annotated with waves = 0.037037, but 8 blocks on 132 SMs x 2 per SM are 0.030303 waves
