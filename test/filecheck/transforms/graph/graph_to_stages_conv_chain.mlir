// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-select-policy{policy=tile},sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=TILE

// A ResNet-style pair of 3x3 convs, channels last: conv1 (64 -> 128 channels, bias and ReLU in
// its epilogue), conv2 (128 -> 64) over 2 images of 16x16 pixels. Both are implicit GEMMs of
// 512 pixel rows in tiles of 128 (8 image rows each); conv2 reads conv1's NHW x 128 output as
// a 2 x 16 x 16 x 128 tensor, masked at the image borders.
func.func @conv_chain(%x: tensor<2x16x16x64xf16>, %w1: tensor<128x3x3x64xf16>, %b1: tensor<128xf16>, %w2: tensor<64x3x3x128xf16>) -> tensor<2x16x16x64xf16> {
  %h = graph.conv2d %x, %w1, %b1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<2x16x16x64xf16>, tensor<128x3x3x64xf16>, tensor<128xf16>) -> tensor<2x16x16x128xf16>
  %a = graph.relu %h : tensor<2x16x16x128xf16>
  %y = graph.conv2d %a, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<2x16x16x128xf16>, tensor<64x3x3x128xf16>) -> tensor<2x16x16x64xf16>
  func.return %y : tensor<2x16x16x64xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = (tensor<2x16x16x64xf16>, tensor<128x3x3x64xf16>, tensor<128xf16>, tensor<64x3x3x128xf16>) -> tensor<2x16x16x64xf16>, graph.temps = [tensor<2x16x16x128xf16>]} {
// CHECK-NOT:  func.func
// CHECK:      gpu.func @conv1(%A: memref<2x16x16x64xf16>, %B: memref<128x576xf16>, %C: memref<512x128xf16>, %bias: memref<128xf16>) kernel
// CHECK:      sync.load_point operand 0 [%{{.*}}, %{{.*}}] step %{{.*}}
// CHECK-NEXT: arith.constant
// The im2col gather: [n, p + r - 1, q + s - 1, c], masked (the halo outside the image is zero).
// CHECK:      tile.cp_async %{{.*}}, %A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] masked swizzle {{.*}} : memref<4x128x64xf16, 3 : i64>, memref<2x16x16x64xf16>
// The ReLU after the bias: max(x + b, 0) in the epilogue.
// CHECK:      tile.store_acc %{{.*}}, %C[%{{.*}}, %{{.*}}] epilogue {
// CHECK:      memref.load %bias
// CHECK-NEXT: arith.extf
// CHECK-NEXT: %[[SUM:.*]] = arith.addf
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: arith.maxnumf %[[SUM]], %[[ZERO]] : f32
// CHECK:      sync.store_point
// CHECK:      gpu.func @conv2(%A: memref<2x16x16x128xf16>, %B: memref<64x1152xf16>, %C: memref<512x64xf16>) kernel
// CHECK:      tile.cp_async %{{.*}}, %A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] masked swizzle {{.*}} : memref<4x128x64xf16, 3 : i64>, memref<2x16x16x128xf16>

// CHECK:      sync.stage @conv1 {graph.bind = [#graph.bind<input 0>, #graph.bind<input 1 over [128, 576]>, #graph.bind<temp 0>, #graph.bind<input 2>], kernel = @conv1_module::@conv1, grid = array<i64: 4, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>}
// CHECK-NEXT: sync.stage @conv2 {graph.bind = [#graph.bind<temp 0>, #graph.bind<input 3 over [64, 1152]>, #graph.bind<result 0>], kernel = @conv2_module::@conv2, grid = array<i64: 4, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>}
// k-step s0 of conv2 reads the 64 channels (s0 mod 2) · 64 of one filter tap: conv1's column
// tile s0 mod 2; its 128 pixels read one image row above and below: tile rows d0 - 1 .. d0 + 1
// (the first and last tile rows' neighbours past the grid are padding: clipped).
// CHECK-NEXT: sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 + -1, s0 mod 2) forall s0 in [0, 18), s1 in [0, 3) clipped
// CHECK-NEXT: sync.launch @conv1 {priority = -1 : i64}
// CHECK-NEXT: sync.launch @conv2 {stream = 1 : i64}

// The cuSync passes take the chain as it is: a row of conv1 is read by three consumer rows and
// in every channel tile, so RowSync (one semaphore per tile row, two posts); PDL; every tile
// of both stages proved against the kernels' loads, the halo included.
// SYNC:      sync.stage @conv1 {{.*}}sync.verified = "proved"{{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 2>}
// SYNC-NEXT: sync.stage @conv2 {{.*}}sync.progress = "@conv1: programmatic dependent launch", sync.verified = "proved"
// SYNC:      sync.launch @conv2 {pdl = true}

// Conv2DTileSync's granularity: a semaphore per conv1 tile, waited on per k-step.
// TILE:      sync.stage @conv1 {{.*}}sync.verified = "proved"{{.*}}policy = #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1>}
// TILE-NEXT: sync.stage @conv2 {{.*}}sync.verified = "proved"
