// RUN: tilesync-opt %s | tilesync-opt | filecheck %s

builtin.module attributes {gpu.container_module} {
  // Kernel level: a consumer GEMM block takes its tile, waits for the producer's row, then
  // posts its own tile for the next stage.
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<?xi32>, memref<4xi32>, i32) -> (), kernel}> ({
    ^bb0(%in_sems: memref<?xi32>, %out_sems: memref<4xi32>, %epoch: i32):
      %x, %y = sync.tile : index, index
      %ox, %oy = sync.tile order #sync.order<row_major> : index, index
      %t = sync.tile order #sync.order<strided<3>> : index
      %a, %b, %c = sync.tile order #sync.order<table> : index, index, index
      sync.wait %in_sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 48> : memref<?xi32>
      sync.wait %in_sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1> timeout_ns 2000000000 : memref<?xi32>
      sync.wait %in_sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %ready = sync.probe %in_sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>, affine_map<(d0, d1) -> (d0 - 1, d1)>] over [array<i64: 0, 48, 4>, array<i64>] clipped_to array<i64: 4, 48> : memref<?xi32>
      sync.wait %in_sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1> unless %ready : memref<?xi32>
      %all = sync.probe %in_sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 48> reads [affine_map<(d0, d1)[s0] -> (s0, 0)>] over [array<i64: 0, 4, 1>] until_ready : memref<?xi32>
      sync.post %out_sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 96> : memref<4xi32>
      "gpu.return"() : () -> ()
    }) {sym_name = "gemm"} : () -> ()
  }) : () -> ()

  // CHECK:      %x, %y = sync.tile : index, index
  // CHECK-NEXT: %ox, %oy = sync.tile order #sync.order<row_major> : index, index
  // CHECK-NEXT: %t = sync.tile order #sync.order<strided<3>> : index
  // CHECK-NEXT: %a, %b, %c = sync.tile order #sync.order<table> : index, index, index
  // CHECK-NEXT: sync.wait %in_sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 48> : memref<?xi32>
  // CHECK-NEXT: sync.wait %in_sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1> timeout_ns 2000000000 : memref<?xi32>
  // CHECK-NEXT: sync.wait %in_sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
  // CHECK-NEXT: %ready = sync.probe %in_sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>, affine_map<(d0, d1) -> ((d0 + -1), d1)>] over [array<i64: 0, 48, 4>, array<i64>] clipped_to array<i64: 4, 48> : memref<?xi32>
  // CHECK-NEXT: sync.wait %in_sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1> unless %ready : memref<?xi32>
  // CHECK-NEXT: %all = sync.probe %in_sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 48> reads [affine_map<(d0, d1)[s0] -> (s0, 0)>] over [array<i64: 0, 4, 1>] until_ready : memref<?xi32>
  // CHECK-NEXT: sync.post %out_sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 96> : memref<4xi32>

  // GPT-3 MLP (8-way): M×6144 = X·W1 with GeLU in 4×48 tiles, then M×12288 = H·W2 in 4×96
  // tiles; a row of the second GEMM reads the whole row of the first.
  sync.stage @mlp1 {kernel = @kernels::@gemm, grid = array<i64: 4, 48>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, order = #sync.order<row_major>}
  sync.stage @mlp2 {kernel = @kernels::@gemm, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, order = #sync.order<row_major>}
  sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
  sync.wait_kernel @mlp1 {stream = 1 : i64}
  sync.launch @mlp1 {stream = 0 : i64, priority = -1 : i64, pdl = false}
  sync.launch @mlp2 {stream = 1 : i64, priority = 0 : i64, pdl = false}

  // CHECK:      sync.stage @mlp1 {kernel = @kernels::@gemm, grid = array<i64: 4, 48>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, order = #sync.order<row_major>}
  // CHECK-NEXT: sync.stage @mlp2 {kernel = @kernels::@gemm, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, order = #sync.order<row_major>}
  // CHECK-NEXT: sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
  // CHECK-NEXT: sync.wait_kernel @mlp1 {stream = 1 : i64}
  // CHECK-NEXT: sync.launch @mlp1 {priority = -1 : i64}
  // CHECK-NEXT: sync.launch @mlp2 {stream = 1 : i64}

  // Attention: the QKV GEMM has 3 heads × (Q, K, V) column tiles; head h of the attention
  // kernel reads columns h, h + 3, h + 6 (tiles a stride apart: StridedSync).
  sync.stage @qkv {kernel = @kernels::@gemm, grid = array<i64: 4, 9>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, order = #sync.order<strided<3>>}
  sync.stage @attn {kernel = @kernels::@gemm, grid = array<i64: 4, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 3) forall s0 in [0, 3)

  // CHECK:      sync.stage @qkv {{.*}} order = #sync.order<strided<3>>}
  // CHECK:      sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 3) forall s0 in [0, 3)

  // A 3×3 conv chain (implicit GEMM, 8 row tiles of pixels × 4 channel tiles): consumer row r
  // reads producer rows r-1..r+1 and every channel tile. The producer writes a padded output
  // with one halo row tile above and below (10 rows), so row r+s0 of the padded grid is
  // unpadded row r+s0-1 and every read stays inside the grid.
  sync.stage @conv1 {kernel = @kernels::@gemm, grid = array<i64: 10, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64, 32>}
  sync.stage @conv2 {kernel = @kernels::@gemm, grid = array<i64: 8, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64, 32>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s0, s1) forall s0 in [0, 3), s1 in [0, 4)

  // CHECK:      sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s0, s1) forall s0 in [0, 3), s1 in [0, 4)

  // A three-stage chain with 3-D grids (split-K slices in z), tile for tile.
  sync.stage @chain1 {kernel = @kernels::@gemm, grid = array<i64: 2, 4, 2>, block = array<i64: 64, 2, 1>, tile = array<i64: 64, 64>}
  sync.stage @chain2 {kernel = @kernels::@gemm, grid = array<i64: 2, 4, 2>, block = array<i64: 64, 2, 1>, tile = array<i64: 64, 64>}
  sync.stage @chain3 {kernel = @kernels::@gemm, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, order = #sync.order<column_major>}
  sync.dependency @chain1 -> @chain2 operand 0 tiles (d0, d1, d2)[s0] -> (d0, d1, s0) forall s0 in [0, 2)
  sync.dependency @chain2 -> @chain3 operand 0 tiles (d0) -> (d0 floordiv 4, d0 mod 4, 1)
  sync.launch @chain1
  sync.launch @chain2 {stream = 1 : i64, pdl = true}
  sync.launch @chain3 {stream = 2 : i64, pdl = true}

  // CHECK:      sync.dependency @chain1 -> @chain2 operand 0 tiles (d0, d1, d2)[s0] -> (d0, d1, s0) forall s0 in [0, 2)
  // CHECK-NEXT: sync.dependency @chain2 -> @chain3 operand 0 tiles (d0) -> (d0 floordiv 4, d0 mod 4, 1)
  // CHECK-NEXT: sync.launch @chain1
  // CHECK-NEXT: sync.launch @chain2 {stream = 1 : i64, pdl = true}
  // CHECK-NEXT: sync.launch @chain3 {stream = 2 : i64, pdl = true}

  // cuSync in one launch: conv2's blocks join conv1's grid, tickets conv1's first.
  sync.launch @conv1 {stream = 3 : i64, priority = -1 : i64}
  sync.launch @conv2 {stream = 3 : i64, fused = true}

  // CHECK:      sync.launch @conv1 {stream = 3 : i64, priority = -1 : i64}
  // CHECK-NEXT: sync.launch @conv2 {stream = 3 : i64, fused = true}

  // Attention output P·V: both operands are produced by earlier stages (softmax gives P as
  // operand 0, the V projection gives V as operand 1).
  sync.stage @softmax {kernel = @kernels::@gemm, grid = array<i64: 4, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128>}
  sync.stage @v_proj {kernel = @kernels::@gemm, grid = array<i64: 8, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 128, 32>}
  sync.stage @pv {kernel = @kernels::@gemm, grid = array<i64: 4, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.dependency @softmax -> @pv operand 0 tiles (d0, d1) -> (d0, 0)
  sync.dependency @v_proj -> @pv operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 8)

  // CHECK:      sync.dependency @softmax -> @pv operand 0 tiles (d0, d1) -> (d0, 0)
  // CHECK-NEXT: sync.dependency @v_proj -> @pv operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 8)

  // Every policy shape and tile order as a plain attribute.
  "test.op"() {
    tile = #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1>,
    tile_col_major = #sync.policy<TileSync (d0, d1) -> (d1 * 4 + d0), posts = 1>,
    row = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>,
    row3 = #sync.policy<RowSync (d0, d1, d2) -> (d0 * 2 + d2), posts = 4>,
    strided = #sync.policy<StridedSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 3>,
    conv = #sync.policy<Conv2DTileSync (d0, d1) -> (d0 * 2 + d1 floordiv 2), posts = 2>,
    custom = #sync.policy<Custom (d0, d1) -> (d1), posts = 4>,
    orders = [#sync.order<row_major>, #sync.order<column_major>, #sync.order<strided<3>>, #sync.order<table<1, 2, 3>>]
  } : () -> ()

  // CHECK:      "test.op"() {
  // CHECK-SAME: tile = #sync.policy<TileSync (d0, d1) -> (d0 * 48 + d1), posts = 1>
  // CHECK-SAME: tile_col_major = #sync.policy<TileSync (d0, d1) -> (d1 * 4 + d0), posts = 1>
  // CHECK-SAME: row = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>
  // CHECK-SAME: row3 = #sync.policy<RowSync (d0, d1, d2) -> (d0 * 2 + d2), posts = 4>
  // CHECK-SAME: strided = #sync.policy<StridedSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 3>
  // CHECK-SAME: conv = #sync.policy<Conv2DTileSync (d0, d1) -> (d0 * 2 + d1 floordiv 2), posts = 2>
  // CHECK-SAME: custom = #sync.policy<Custom (d0, d1) -> (d1), posts = 4>
  // CHECK-SAME: orders = [#sync.order<row_major>, #sync.order<column_major>, #sync.order<strided<3>>, #sync.order<table<1, 2, 3>>]
}
