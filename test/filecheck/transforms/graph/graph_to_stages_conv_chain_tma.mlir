// RUN: tilesync-opt %s -p 'graph-to-stages{conv-pipeline=tma_ws}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages{conv-pipeline=tma_ws},sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=SYNC
// RUN: tilesync-opt %s -p 'graph-to-stages{conv-pipeline=tma_ws},sync-select-policy{policy=tile},sync-insert-post-wait,sync-use-pdl,sync-verify' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=TILE

// graph_to_stages_conv_chain.mlir's chain with conv-pipeline=tma_ws: both convs are the
// warp-specialized TMA GEMM, one tile a block (sync hooks), 64-row tiles (one consumer
// warpgroup and a producer warpgroup: 256 threads) with the TMA-store epilogue. A is an
// im2col map of the conv's input, whose type has the tensor's shape; conv2's is conv1's
// output (temp 0) as 2 x 16 x 16 x 128, its C a tiled map of the same temp as 512 x 128; B a
// tiled map of the filter over the matrix K x 9C (`over`), as the kernel reads it.
func.func @conv_chain(%x: tensor<2x16x16x64xf16>, %w1: tensor<128x3x3x64xf16>, %b1: tensor<128xf16>, %w2: tensor<64x3x3x128xf16>) -> tensor<2x16x16x64xf16> {
  %h = graph.conv2d %x, %w1, %b1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<2x16x16x64xf16>, tensor<128x3x3x64xf16>, tensor<128xf16>) -> tensor<2x16x16x128xf16>
  %a = graph.relu %h : tensor<2x16x16x128xf16>
  %y = graph.conv2d %a, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<2x16x16x128xf16>, tensor<64x3x3x128xf16>) -> tensor<2x16x16x64xf16>
  func.return %y : tensor<2x16x16x64xf16>
}

// CHECK:      gpu.func @conv1(%A: !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>, %B: !tile.tensor_map<64x64xf16, swizzle 128>, %C: !tile.tensor_map<64x64xf16, swizzle 128>, %bias: memref<128xf16>) kernel
// The consumer warpgroup posts its stored tile (after its TMA stores' writes); the producer
// thread waits (async proxy) before each of a k-tile's copies: A's im2col copy at the tap's
// offsets, then B's tile.
// CHECK:      sync.store_point [%{{.*}}, %{{.*}}] threads 128 async_proxy
// CHECK:      sync.load_point operand 0 [%{{.*}}, %{{.*}}] step %{{.*}} single_thread async_proxy
// CHECK:      tile.tma_load %A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] im2col[%{{.*}}, %{{.*}}], {{.*}} : !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>
// CHECK-NEXT: sync.load_point operand 1 [%{{.*}}, %{{.*}}] step %{{.*}} single_thread async_proxy
// CHECK-NEXT: tile.tma_load %B[%{{.*}}, %{{.*}}], {{.*}} : !tile.tensor_map<64x64xf16, swizzle 128>
// CHECK:      gpu.func @conv2(%A: !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 128]>, %B: !tile.tensor_map<64x64xf16, swizzle 128>, %C: !tile.tensor_map<64x64xf16, swizzle 128>) kernel
// CHECK:      sync.stage @conv1 {graph.bind = [#graph.bind<input 0 as !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>>, #graph.bind<input 1 over [128, 576] as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<temp 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 2>], kernel = @conv1_module::@conv1, grid = array<i64: 8, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 64, 64>}
// CHECK-NEXT: sync.stage @conv2 {graph.bind = [#graph.bind<temp 0 as !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 128]>>, #graph.bind<input 3 over [64, 1152] as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<result 0 as !tile.tensor_map<64x64xf16, swizzle 128>>], kernel = @conv2_module::@conv2, grid = array<i64: 8, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 64, 64>}
// 64 pixels are 4 image rows: the halo is one tile row either side.
// CHECK-NEXT: sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 + -1, s0 mod 2) forall s0 in [0, 18), s1 in [0, 3) clipped

// sync-verify bounds each im2col copy's pixels (operand_access.im2col_box) and proves both
// policies, the halo included.
// SYNC:      sync.stage @conv1 {{.*}}sync.verified = "proved"{{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 2>}
// SYNC-NEXT: sync.stage @conv2 {{.*}}sync.progress = "@conv1: programmatic dependent launch", sync.verified = "proved"
// TILE:      sync.stage @conv1 {{.*}}sync.verified = "proved"{{.*}}policy = #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1>}
// TILE-NEXT: sync.stage @conv2 {{.*}}sync.verified = "proved"

// -----

// 32 input channels: an im2col k-tile of 64 channels would span two filter taps.
// expected-error @+1 {{graph-to-stages: conv-pipeline=tma_ws copies 64-channel k-tiles of one filter tap: the input has 32 channels, not a multiple of 64}}
func.func @narrow_input(%x: tensor<1x8x8x32xf16>, %w1: tensor<64x3x3x32xf16>, %w2: tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16> {
  %h = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x32xf16>, tensor<64x3x3x32xf16>) -> tensor<1x8x8x64xf16>
  %y = graph.conv2d %h, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16>
  func.return %y : tensor<1x8x8x64xf16>
}
