// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused}' | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused},sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// 256 new tokens after a KV cache of 128 (two heads of 128): whole query blocks of 64, no
// split; O as B x T x C. A block's new keys are its sequence's two blocks of 128 from QKV
// (steps from the first after the cache, two QKV tile rows each).

// CHECK:      gpu.func @attention(%Q: memref<256x768xf16>, %K: memref<256x768xf16>, %V: memref<256x768xf16>, %O: memref<1x256x256xf16>, %K_cache: memref<256x128xf16>, %V_cache: memref<256x128xf16>)
// CHECK:      sync.stage @attention {{.*}}grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 128>}
// CHECK:      sync.dependency @qkv -> @attention operand 1 tiles (d0, d1)[s0, s1, s2] -> ((d0 floordiv 4 * 256 + s0 * 128) floordiv 64 + s2, (d1 * 128 + 256) floordiv 64 + s1) forall s0 in [0, 2), s1 in [0, 2), s2 in [0, 2){{$}}
// CHECK:      sync.dependency @attention -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 64 floordiv 64 + s1, s0 * 64 floordiv 128) forall s0 in [0, 4), s1 in [0, 1){{$}}

// SYNC: sync.stage @attention {{.*}} sync.verified = "proved"
// SYNC: sync.stage @out {{.*}} sync.verified = "proved"
func.func @attention(%x: tensor<256x512xf16>, %wqkv: tensor<768x512xf16>, %wo: tensor<512x256xf16>, %kc: tensor<2x128x128xf16>, %vc: tensor<2x128x128xf16>) -> tensor<256x512xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<256x512xf16>, tensor<768x512xf16>) -> tensor<256x768xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<256x768xf16>) -> (tensor<256x256xf16>, tensor<256x256xf16>, tensor<256x256xf16>)
  %q4 = graph.reshape %q : (tensor<256x256xf16>) -> tensor<256x2x128xf16>
  %qh = graph.transpose %q4 perm [1, 0, 2] : (tensor<256x2x128xf16>) -> tensor<2x256x128xf16>
  %k4 = graph.reshape %k : (tensor<256x256xf16>) -> tensor<256x2x128xf16>
  %kh = graph.transpose %k4 perm [1, 0, 2] : (tensor<256x2x128xf16>) -> tensor<2x256x128xf16>
  %v4 = graph.reshape %v : (tensor<256x256xf16>) -> tensor<256x2x128xf16>
  %vh = graph.transpose %v4 perm [1, 0, 2] : (tensor<256x2x128xf16>) -> tensor<2x256x128xf16>
  %ka = graph.concat %kc, %kh dim -2 : (tensor<2x128x128xf16>, tensor<2x256x128xf16>) -> tensor<2x384x128xf16>
  %va = graph.concat %vc, %vh dim -2 : (tensor<2x128x128xf16>, tensor<2x256x128xf16>) -> tensor<2x384x128xf16>
  %s = graph.linear %qh, %ka : (tensor<2x256x128xf16>, tensor<2x384x128xf16>) -> tensor<2x256x384xf16>
  %p = graph.softmax %s dim -1 scale 0.08838834764831845 : tensor<2x256x384xf16>
  %o = graph.matmul %p, %va : (tensor<2x256x384xf16>, tensor<2x384x128xf16>) -> tensor<2x256x128xf16>
  %ot = graph.transpose %o perm [1, 0, 2] : (tensor<2x256x128xf16>) -> tensor<256x2x128xf16>
  %om = graph.reshape %ot : (tensor<256x2x128xf16>) -> tensor<256x256xf16>
  %y = graph.linear %om, %wo : (tensor<256x256xf16>, tensor<512x256xf16>) -> tensor<256x512xf16>
  func.return %y : tensor<256x512xf16>
}
