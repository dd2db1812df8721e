// RUN: tilesync-opt %s -p 'sync-tile-order{order=generated}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s -p 'sync-tile-order{order=row_major}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NAMED

// Two stages that read each other: no order finishes producers first.
builtin.module {
  sync.stage @a {kernel = @kernels::@gemm, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.stage @b {kernel = @kernels::@gemm, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @a operand 0 tiles (d0) -> (d0)
}
// CHECK: sync-tile-order: the dependencies between stages @a, @b form a cycle: no order finishes producers first

// -----

// Deriving the order would read 4096 x 4096 consumer tiles times a row of 4096 producer tiles
// each (minutes of enumeration): refused at once; a named order still applies (NAMED).
builtin.module {
  sync.stage @p {kernel = @kernels::@gemm, grid = array<i64: 4096, 4096>, block = array<i64: 128>, tile = array<i64: 64, 64>}
  sync.stage @c {kernel = @kernels::@gemm, grid = array<i64: 4096, 4096>, block = array<i64: 128>, tile = array<i64: 64, 64>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4096)
}
// CHECK: sync-tile-order: order=generated would enumerate 68719476736 producer tiles read through this dependency (16777216 consumer tiles x its forall box), more than the 1000000 it derives an order from: name an order (row_major, column_major)
// NAMED: sync.stage @c {{.*}}order = #sync.order<row_major>
