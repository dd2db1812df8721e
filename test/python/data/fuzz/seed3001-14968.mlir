// input 14968 of seed 3001: test/filecheck/dialects/sync/roundtrip.mlir; delete-lines, integer
builtin.module attributes {gpu.container_module} {
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
      sync.post %out_sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 96> : memref<4xi32>
      "gpu.return"() : () -> ()
    }) {sym_name = "gemm"} : () -> ()
  }) : () -> ()


  sync.stage @mlp1 {kernel = @kernels::@gemm, grid = array<i64: 2147483647, 48>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, order = #sync.order<row_major>}
  sync.stage @mlp2 {kernel = @kernels::@gemm, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, order = #sync.order<row_major>}
  sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
  sync.wait_kernel @mlp1 {stream = 1 : i64}
  sync.launch @mlp1 {stream = 0 : i64, priority = -1 : i64, pdl = false}
  sync.launch @mlp2 {stream = 1 : i64, priority = 0 : i64, pdl = false}


  sync.stage @qkv {kernel = @kernels::@gemm, grid = array<i64: 4, 9>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, order = #sync.order<strided<3>>}
  sync.stage @attn {kernel = @kernels::@gemm, grid = array<i64: 4, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 3) forall s0 in [0, 3)


  sync.stage @conv1 {kernel = @kernels::@gemm, grid = array<i64: 10, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64, 32>}
  sync.stage @conv2 {kernel = @kernels::@gemm, grid = array<i64: 8, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64, 32>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s0, s1) forall s0 in [0, 3), s1 in [0, 4)


  sync.stage @chain1 {kernel = @kernels::@gemm, grid = array<i64: 2, 4, 2>, block = array<i64: 64, 2, 1>, tile = array<i64: 64, 64>}
  sync.stage @chain2 {kernel = @kernels::@gemm, grid = array<i64: 2, 4, 2>, block = array<i64: 64, 2, 1>, tile = array<i64: 64, 64>}
  sync.stage @chain3 {kernel = @kernels::@gemm, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, order = #sync.order<column_major>}
  sync.dependency @chain1 -> @chain2 operand 0 tiles (d0, d1, d2)[s0] -> (d0, d1, s0) forall s0 in [0, 2)
  sync.dependency @chain2 -> @chain3 operand 0 tiles (d0) -> (d0 floordiv 4, d0 mod 4, 1)
  sync.launch @chain1
  sync.launch @chain2 {stream = 1 : i64, pdl = true}
  sync.launch @chain3 {stream = 2 : i64, pdl = true}


  sync.stage @softmax {kernel = @kernels::@gemm, grid = array<i64: 4, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128>}
  sync.stage @v_proj {kernel = @kernels::@gemm, grid = array<i64: 8, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 128, 32>}
  sync.stage @pv {kernel = @kernels::@gemm, grid = array<i64: 4, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 32>}
  sync.dependency @v_proj -> @pv operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 8)


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

}
