// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused}' | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused},sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify{steps=1000000}' | filecheck %s --check-prefix=SYNC

// GPT-3's twelve heads of 128 under 8-way tensor parallelism at T = 1024 (x 1024 x 12288),
// fused. Every query block reads every key block, so no attention block fills the QKV GEMM's
// last partial wave: the fused program's projections take the TMA tile the wave model predicts
// fastest (any width: a head that straddles two tiles is a range of two), here 128 x 144 for
// QKV (8 x 32 = 256 tiles, two waves of 132; the chain's 128 x 128 takes 288, three) and
// 128 x 256 for the output GEMM. The QKV tile leaves by TMA in boxes of 16 columns (144 is no
// multiple of 64).

// CHECK:      sync.stage @qkv {sync.wait_at_probe, graph.bind = [#graph.bind<input 0 as !tile.tensor_map<128x64xf16, swizzle 128>>, #graph.bind<input 1 as !tile.tensor_map<144x64xf16, swizzle 128>>, #graph.bind<temp 0 as !tile.tensor_map<64x16xf16, swizzle 32>>], kernel = @qkv_module::@qkv, grid = array<i64: 8, 32>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 144, 64>}
// CHECK-NEXT: sync.stage @attention {{.*}} grid = array<i64: 8, 12>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128>}
// CHECK-NEXT: sync.stage @out {{.*}}#graph.bind<input 2 as !tile.tensor_map<256x64xf16, swizzle 128>>{{.*}} grid = array<i64: 8, 48>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 256, 64>}
// A head's 128 columns span two 144-wide QKV tiles (s0 in [0, 2)); v's last head reaches past
// the grid's 32 columns, so its range is clipped.
// CHECK-NEXT: sync.dependency @qkv -> @attention operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 128 floordiv 128 + s1, d1 * 128 floordiv 144 + s0) forall s0 in [0, 2), s1 in [0, 1){{$}}
// CHECK-NEXT: sync.dependency @qkv -> @attention operand 1 tiles (d0, d1)[s0, s1, s2] -> (s0 * 128 floordiv 128 + s2, (d1 * 128 + 1536) floordiv 144 + s1) forall s0 in [0, 8), s1 in [0, 2), s2 in [0, 1){{$}}
// CHECK-NEXT: sync.dependency @qkv -> @attention operand 2 tiles (d0, d1)[s0, s1, s2] -> (s0 * 128 floordiv 128 + s2, (d1 * 128 + 3072) floordiv 144 + s1) forall s0 in [0, 8), s1 in [0, 2), s2 in [0, 1) clipped
// CHECK-NEXT: sync.dependency @attention -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 128 floordiv 128 + s1, s0 * 64 floordiv 128) forall s0 in [0, 24), s1 in [0, 1)

// SYNC: sync.stage @qkv {{.*}} sync.verified = "proved"{{.*}} tile = array<i64: 128, 144, 64>, policy = #sync.policy<TileSync
// SYNC: sync.stage @attention {{.*}} sync.verified = "proved"
// SYNC: sync.stage @out {{.*}} sync.verified = "proved"
func.func @attention(%x: tensor<1024x12288xf16>, %wqkv: tensor<4608x12288xf16>, %wo: tensor<12288x1536xf16>) -> tensor<1024x12288xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<1024x12288xf16>, tensor<4608x12288xf16>) -> tensor<1024x4608xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<1024x4608xf16>) -> (tensor<1024x1536xf16>, tensor<1024x1536xf16>, tensor<1024x1536xf16>)
  %q4 = graph.reshape %q : (tensor<1024x1536xf16>) -> tensor<1024x12x128xf16>
  %qh = graph.transpose %q4 perm [1, 0, 2] : (tensor<1024x12x128xf16>) -> tensor<12x1024x128xf16>
  %k4 = graph.reshape %k : (tensor<1024x1536xf16>) -> tensor<1024x12x128xf16>
  %kh = graph.transpose %k4 perm [1, 0, 2] : (tensor<1024x12x128xf16>) -> tensor<12x1024x128xf16>
  %v4 = graph.reshape %v : (tensor<1024x1536xf16>) -> tensor<1024x12x128xf16>
  %vh = graph.transpose %v4 perm [1, 0, 2] : (tensor<1024x12x128xf16>) -> tensor<12x1024x128xf16>
  %s = graph.linear %qh, %kh : (tensor<12x1024x128xf16>, tensor<12x1024x128xf16>) -> tensor<12x1024x1024xf16>
  %p = graph.softmax %s dim -1 scale 0.08838834764831845 : tensor<12x1024x1024xf16>
  %o = graph.matmul %p, %vh : (tensor<12x1024x1024xf16>, tensor<12x1024x128xf16>) -> tensor<12x1024x128xf16>
  %ot = graph.transpose %o perm [1, 0, 2] : (tensor<12x1024x128xf16>) -> tensor<1024x12x128xf16>
  %om = graph.reshape %ot : (tensor<1024x12x128xf16>) -> tensor<1024x1536xf16>
  %y = graph.linear %om, %wo : (tensor<1024x1536xf16>, tensor<12288x1536xf16>) -> tensor<1024x12288xf16>
  func.return %y : tensor<1024x12288xf16>
}
