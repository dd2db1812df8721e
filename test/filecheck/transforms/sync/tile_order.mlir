// RUN: tilesync-opt %s -p 'sync-tile-order{order=generated}' | filecheck %s
// RUN: tilesync-opt %s -p 'sync-tile-order{order=ready}' | filecheck %s --check-prefix=READY
// RUN: tilesync-opt %s -p 'sync-tile-order{order=column_major}' | filecheck %s --check-prefix=COL
// RUN: tilesync-opt %s -p 'sync-tile-order{order=strided}' | filecheck %s --check-prefix=STRIDED

builtin.module {
  // GPT-3 MLP (8-way): a row of the second GEMM reads the whole row of the first (RowSync).
  // generated: the consumer (read by none) keeps row-major, and its tiles need the producer's
  // rows in order: row-major. ready: producer rows complete in row-major order, so the
  // consumer takes its tiles row-major.
  sync.stage @mlp1 {kernel = @kernels::@gemm, grid = array<i64: 4, 48>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, order = #sync.order<row_major>}
  sync.stage @mlp2 {kernel = @kernels::@gemm, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>}
  sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
  // CHECK:      sync.stage @mlp1 {{.*}}order = #sync.order<row_major>}
  // CHECK-NEXT: sync.stage @mlp2 {{.*}}order = #sync.order<row_major>}
  // READY:      sync.stage @mlp1 {{.*}}order = #sync.order<row_major>}
  // READY-NEXT: sync.stage @mlp2 {{.*}}order = #sync.order<row_major>}
  // COL:        sync.stage @mlp1 {{.*}}order = #sync.order<column_major>}
  // COL-NEXT:   sync.stage @mlp2 {{.*}}order = #sync.order<column_major>}
  // STRIDED:    sync.stage @mlp1 {{.*}}order = #sync.order<row_major>}
  // STRIDED-NEXT: sync.stage @mlp2 {kernel = @kernels::@gemm, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>}

  // A consumer tile reads a whole column of the producer. generated: the consumer takes its
  // tiles row-major, tile (0, c) needing column c of the producer: the producer goes
  // column-major. ready: the producer has no order: it gets row_major (so when its tiles
  // finish is defined); its column c is done with its last row, columns finish left to
  // right, and the consumer takes its tiles column-major.
  sync.stage @rows {kernel = @kernels::@gemm, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @cols {kernel = @kernels::@gemm, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @rows -> @cols operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 4)
  // CHECK:      sync.stage @rows {{.*}}order = #sync.order<column_major>}
  // CHECK-NEXT: sync.stage @cols {{.*}}order = #sync.order<row_major>}
  // READY:      sync.stage @rows {{.*}}order = #sync.order<row_major>}
  // READY-NEXT: sync.stage @cols {{.*}}order = #sync.order<column_major>}

  // Attention: head h reads QKV columns h, h + 3, h + 6. A third stage reads the attention
  // output transposed (tile (a, b) reads tile (b, a)). ready: QKV's given strided order
  // (columns 0, 3, 6 of a head one after the other) finishes a head's columns together:
  // row-major heads. generated: @out (read by none) is row-major; it needs @attn column by
  // column; @attn's tile (r, h), in that order, needs QKV columns h, h + 3, h + 6 of row r:
  // the given order gives way to that table.
  sync.stage @qkv {kernel = @kernels::@gemm, grid = array<i64: 2, 9>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, order = #sync.order<strided<3>>}
  sync.stage @attn {kernel = @kernels::@gemm, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.stage @out {kernel = @kernels::@gemm, grid = array<i64: 3, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 3) forall s0 in [0, 3)
  sync.dependency @attn -> @out operand 0 tiles (d0, d1) -> (d1, d0)
  // CHECK:      sync.stage @qkv {{.*}}order = #sync.order<table<0, 3, 6, 9, 12, 15, 1, 4, 7, 10, 13, 16, 2, 5, 8, 11, 14, 17>>}
  // CHECK-NEXT: sync.stage @attn {{.*}}order = #sync.order<column_major>}
  // CHECK-NEXT: sync.stage @out {{.*}}order = #sync.order<row_major>}
  // READY:      sync.stage @qkv {{.*}}order = #sync.order<strided<3>>}
  // READY-NEXT: sync.stage @attn {{.*}}order = #sync.order<row_major>}
  // @out tile (a, b) = id 2a + b is ready when attention tile (b, a) = id 3b + a is done:
  // (0,0)=0, (1,0)=2, (2,0)=4, (0,1)=1, (1,1)=3, (2,1)=5 -- column-major of a 3x2 grid.
  // READY-NEXT: sync.stage @out {{.*}}order = #sync.order<column_major>}
  // STRIDED:    sync.stage @qkv {{.*}}order = #sync.order<strided<3>>}
  // STRIDED-NEXT: sync.stage @attn {kernel = @kernels::@gemm, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}

  // A 1-D strided producer (columns 0, 2, 1, 3) read tile for tile. ready: the consumer
  // follows it exactly (written as the strided order it is). generated: the row-major consumer
  // needs the producer's tiles in row-major order.
  sync.stage @p1d {kernel = @kernels::@gemm, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, order = #sync.order<strided<2>>}
  sync.stage @c1d {kernel = @kernels::@gemm, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p1d -> @c1d operand 0 tiles (d0) -> (d0)
  // CHECK:      sync.stage @p1d {{.*}}order = #sync.order<row_major>}
  // CHECK-NEXT: sync.stage @c1d {{.*}}order = #sync.order<row_major>}
  // READY:      sync.stage @p1d {{.*}}order = #sync.order<strided<2>>}
  // READY-NEXT: sync.stage @c1d {{.*}}order = #sync.order<strided<2>>}

  // Two producers: consumer tile (r, c) reads row r of @left and column c of @right.
  // generated: the row-major consumer needs @left row by row and @right column by column.
  // ready: @left is done in row-major order, @right column-major (left to right, each column
  // after its last row); with both at the fraction of their order done, (r, c) is ready at
  // max((r+1)/2, (c+1)/2).
  sync.stage @left {kernel = @kernels::@gemm, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, order = #sync.order<row_major>}
  sync.stage @right {kernel = @kernels::@gemm, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, order = #sync.order<column_major>}
  sync.stage @both {kernel = @kernels::@gemm, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @left -> @both operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 2)
  sync.dependency @right -> @both operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 2)
  // CHECK:      sync.stage @left {{.*}}order = #sync.order<row_major>}
  // CHECK-NEXT: sync.stage @right {{.*}}order = #sync.order<column_major>}
  // CHECK-NEXT: sync.stage @both {{.*}}order = #sync.order<row_major>}
  // (0,0) at 1/2; (0,1), (1,0), (1,1) at 1: ties in row-major order.
  // READY:      sync.stage @both {{.*}}order = #sync.order<row_major>}

  // cuSync's attention (2024 §IV-B): the dot kernel's tile (r, h) reads QKV columns h, h + 4
  // and h + 8 of row r (StridedSync). generated: "the tile order that schedules these three
  // tiles consecutively", strided<4> (@qkv3), with the consumer row-major. @qkv2 has a third
  // row that no consumer reads: its tiles come last, and the order is a table.
  sync.stage @qkv2 {kernel = @kernels::@gemm, grid = array<i64: 3, 12>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.stage @dot2 {kernel = @kernels::@gemm, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.dependency @qkv2 -> @dot2 operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 4) forall s0 in [0, 3)
  // CHECK:      sync.stage @qkv2 {{.*}}order = #sync.order<table<0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 16, 20, 13, 17, 21, 14, 18, 22, 15, 19, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35>>}
  // CHECK-NEXT: sync.stage @dot2 {{.*}}order = #sync.order<row_major>}
  sync.stage @qkv3 {kernel = @kernels::@gemm, grid = array<i64: 2, 12>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.stage @dot3 {kernel = @kernels::@gemm, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.dependency @qkv3 -> @dot3 operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 4) forall s0 in [0, 3)
  // CHECK:      sync.stage @qkv3 {{.*}}order = #sync.order<strided<4>>}
  // CHECK-NEXT: sync.stage @dot3 {{.*}}order = #sync.order<row_major>}
}
