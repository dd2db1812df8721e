// RUN: tilesync-opt %s -p 'graph-to-stages{persistent=true conv-pipeline=tma_ws},sync-verify' | filecheck %s
// RUN: not tilesync-opt %s -p 'graph-to-stages{persistent=true}' 2>&1 | filecheck %s --check-prefix=CPASYNC

// graph_to_stages_conv_chain_tma.mlir's chain with persistent=true: the same TMA convs without
// sync hooks, so persistent grids (a block walks tiles; here fewer tiles than SMs: a block a
// tile), conv1 then conv2 on one stream with no dependency: stream order synchronizes them and
// sync-verify has nothing to prove.
func.func @conv_chain(%x: tensor<2x16x16x64xf16>, %w1: tensor<128x3x3x64xf16>, %b1: tensor<128xf16>, %w2: tensor<64x3x3x128xf16>) -> tensor<2x16x16x64xf16> {
  %h = graph.conv2d %x, %w1, %b1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<2x16x16x64xf16>, tensor<128x3x3x64xf16>, tensor<128xf16>) -> tensor<2x16x16x128xf16>
  %a = graph.relu %h : tensor<2x16x16x128xf16>
  %y = graph.conv2d %a, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<2x16x16x128xf16>, tensor<64x3x3x128xf16>) -> tensor<2x16x16x64xf16>
  func.return %y : tensor<2x16x16x64xf16>
}

// CHECK:      gpu.func @conv1(%A: !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>, %B: !tile.tensor_map<64x64xf16, swizzle 128>, %C: !tile.tensor_map<64x64xf16, swizzle 128>, %bias: memref<128xf16>) kernel
// CHECK-NOT:  sync.tile
// CHECK-NOT:  sync.load_point
// CHECK-NOT:  sync.store_point
// CHECK:      tile.tma_load %A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] im2col[%{{.*}}, %{{.*}}], {{.*}} : !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>
// CHECK:      gpu.func @conv2(
// CHECK-NOT:  sync.load_point
// CHECK:      sync.stage @conv1 {graph.bind = [#graph.bind<input 0 as !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>>, #graph.bind<input 1 over [128, 576] as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<temp 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 2>], kernel = @conv1_module::@conv1, grid = array<i64: 16, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 64, 64>}
// CHECK-NEXT: sync.stage @conv2 {{.*}}kernel = @conv2_module::@conv2, grid = array<i64: 8, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 64, 64>}
// CHECK-NEXT: sync.launch @conv1
// CHECK-NEXT: sync.launch @conv2
// CHECK-NOT:  sync.dependency

// The cp.async convs run a block a tile: they have no persistent form.
// CPASYNC: error: graph-to-stages: persistent=true takes a conv chain's TMA convs (conv-pipeline=tma_ws): the cp.async convs run a block a tile
