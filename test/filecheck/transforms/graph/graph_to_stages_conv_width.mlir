// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// 24 images of 8x24 pixels (192: tiles of 128 pixels would straddle images, 64 do not): 72 tile
// rows. conv1 writes 128 channels: 72 x 1 tiles of 64 x 128 keep half a wave of the 132 SMs
// busy (72 >= 66), so its tiles are that wide (one im2col gather for all 128 filters); conv2
// writes 64, one column of 64. Both run 4 stages; conv2's tile row reads conv1's rows one
// above and one below (192-pixel images: a 64-pixel tile starts mid-row).
func.func @conv_chain(%x: tensor<24x8x24x64xf16>, %w1: tensor<128x3x3x64xf16>, %w2: tensor<64x3x3x128xf16>) -> tensor<24x8x24x64xf16> {
  %h = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<24x8x24x64xf16>, tensor<128x3x3x64xf16>) -> tensor<24x8x24x128xf16>
  %a = graph.relu %h : tensor<24x8x24x128xf16>
  %y = graph.conv2d %a, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<24x8x24x128xf16>, tensor<64x3x3x128xf16>) -> tensor<24x8x24x64xf16>
  func.return %y : tensor<24x8x24x64xf16>
}

// CHECK:      sym_name = "smem_a", type = memref<4x64x64xf16, 3 : i64>
// CHECK-NEXT: sym_name = "smem_b", type = memref<4x128x64xf16, 3 : i64>
// CHECK-NEXT: gpu.func @conv1(%A: memref<24x8x24x64xf16>, %B: memref<128x576xf16>, %C: memref<4608x128xf16>)
// CHECK:      sym_name = "smem_a", type = memref<4x64x64xf16, 3 : i64>
// CHECK-NEXT: sym_name = "smem_b", type = memref<4x64x64xf16, 3 : i64>
// CHECK-NEXT: gpu.func @conv2(%A: memref<24x8x24x128xf16>, %B: memref<64x1152xf16>, %C: memref<4608x64xf16>)
// CHECK:      sync.stage @conv1 {{.*}} grid = array<i64: 72, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 128, 64>}
// CHECK-NEXT: sync.stage @conv2 {{.*}} grid = array<i64: 72, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64, 64>}
// CHECK-NEXT: sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 + -1, 0) forall s0 in [0, 18), s1 in [0, 3) clipped

// One column of conv1 tiles: the generated policy is TileSync over it (a semaphore per tile,
// one per tile row), 72 semaphores, which the verifier proves.
// SYNC:      sync.stage @conv1 {{.*}}num_semaphores = 72 : i64, sync.verified = "proved"{{.*}}grid = array<i64: 72, 1>{{.*}}policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
