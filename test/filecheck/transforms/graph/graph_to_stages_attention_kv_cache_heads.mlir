// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused}' | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused},sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// Decoding as in graph_to_stages_attention_kv_cache.mlir with four heads of 64: the
// streaming output GEMM's k-steps are 128 columns, two heads, so each reads two of
// @combine's tiles of its rows (s2), which sync-verify checks against the waits.

// CHECK:      sync.stage @combine {{.*}}grid = array<i64: 3, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 1, 64>}
// CHECK-NEXT: sync.stage @out {{.*}}grid = array<i64: 1, 32>, block = array<i64: 32, 1, 1>, tile = array<i64: 16, 16, 128>}
// CHECK:      sync.dependency @combine -> @out operand 0 tiles (d0, d1)[s0, s1, s2] -> (d0 * 16 + s1, s0 * 128 floordiv 64 + s2) forall s0 in [0, 2), s1 in [0, 16), s2 in [0, 2) clipped{{$}}

// SYNC: sync.stage @combine {{.*}} sync.verified = "proved"
// SYNC: sync.stage @out {{.*}} sync.verified = "proved"
func.func @attention(%x: tensor<3x1x512xf16>, %wqkv: tensor<768x512xf16>, %wo: tensor<512x256xf16>, %kc: tensor<3x4x512x64xf16>, %vc: tensor<3x4x512x64xf16>) -> tensor<3x1x512xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<3x1x512xf16>, tensor<768x512xf16>) -> tensor<3x1x768xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<3x1x768xf16>) -> (tensor<3x1x256xf16>, tensor<3x1x256xf16>, tensor<3x1x256xf16>)
  %q4 = graph.reshape %q : (tensor<3x1x256xf16>) -> tensor<3x1x4x64xf16>
  %qh = graph.transpose %q4 perm [0, 2, 1, 3] : (tensor<3x1x4x64xf16>) -> tensor<3x4x1x64xf16>
  %k4 = graph.reshape %k : (tensor<3x1x256xf16>) -> tensor<3x1x4x64xf16>
  %kh = graph.transpose %k4 perm [0, 2, 1, 3] : (tensor<3x1x4x64xf16>) -> tensor<3x4x1x64xf16>
  %v4 = graph.reshape %v : (tensor<3x1x256xf16>) -> tensor<3x1x4x64xf16>
  %vh = graph.transpose %v4 perm [0, 2, 1, 3] : (tensor<3x1x4x64xf16>) -> tensor<3x4x1x64xf16>
  %ka = graph.concat %kc, %kh dim -2 : (tensor<3x4x512x64xf16>, tensor<3x4x1x64xf16>) -> tensor<3x4x513x64xf16>
  %va = graph.concat %vc, %vh dim -2 : (tensor<3x4x512x64xf16>, tensor<3x4x1x64xf16>) -> tensor<3x4x513x64xf16>
  %s = graph.linear %qh, %ka : (tensor<3x4x1x64xf16>, tensor<3x4x513x64xf16>) -> tensor<3x4x1x513xf16>
  %p = graph.softmax %s dim -1 scale 0.125 : tensor<3x4x1x513xf16>
  %o = graph.matmul %p, %va : (tensor<3x4x1x513xf16>, tensor<3x4x513x64xf16>) -> tensor<3x4x1x64xf16>
  %ot = graph.transpose %o perm [0, 2, 1, 3] : (tensor<3x4x1x64xf16>) -> tensor<3x1x4x64xf16>
  %om = graph.reshape %ot : (tensor<3x1x4x64xf16>) -> tensor<3x1x256xf16>
  %y = graph.linear %om, %wo : (tensor<3x1x256xf16>, tensor<512x256xf16>) -> tensor<3x1x512xf16>
  func.return %y : tensor<3x1x512xf16>
}
