// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused}' | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused},sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC
// RUN: not tilesync-opt %s -p graph-to-stages 2>&1 | filecheck %s --check-prefix=CHAIN

// Decoding with a KV cache: three sequences of one new token each, two heads of 128 over a
// model of 512, 512 tokens cached a sequence (k and v are cat([cache, new], dim=-2)). The
// fused kernel takes the caches as two more arguments (inputs 3 and 4, read whole: no
// dependency). Six (sequence, head) blocks would leave most SMs idle, so each one's five key
// blocks (four cached, one new) are split over five blocks (decode_splits: block
// (b * 5 + p, h) takes key block p), each writing its partial O and Stats (temps 2 and 3,
// fp32, 64 rows a block: its region as its tile says), which @combine merges into O for
// the output GEMM. A split's q and new k and v are its sequence's row of QKV (d0 floordiv 5).
// Three rows stream the weights (streaming_config): 16-row tiles, here 16 columns wide (the
// widest that fill the SMs are the narrowest at these widths), 128-wide k-steps.

// CHECK:      gpu.func @attention(%Q: memref<3x768xf16>, %K: memref<3x768xf16>, %V: memref<3x768xf16>, %O: memref<960x256xf32>, %K_cache: memref<3072x128xf16>, %V_cache: memref<3072x128xf16>, %Stats: memref<960x256xf32>)
// CHECK:      gpu.func @combine(%Parts: memref<960x256xf32>, %Stats: memref<960x256xf32>, %O: memref<3x256xf16>)
// CHECK:      sync.stage @qkv {{.*}}grid = array<i64: 1, 48>, block = array<i64: 32, 1, 1>, tile = array<i64: 16, 16, 128>}
// CHECK-NEXT: sync.stage @attention {{.*}}graph.bind = [#graph.bind<temp 0>, #graph.bind<temp 0>, #graph.bind<temp 0>, #graph.bind<temp 2>, #graph.bind<input 3>, #graph.bind<input 4>, #graph.bind<temp 3>], kernel = @attention_module::@attention, grid = array<i64: 15, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 128>}
// CHECK-NEXT: sync.stage @combine {{.*}}graph.bind = [#graph.bind<temp 2>, #graph.bind<temp 3>, #graph.bind<temp 1>], kernel = @combine_module::@combine, grid = array<i64: 3, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 1, 128>}
// CHECK:      sync.dependency @qkv -> @attention operand 0 tiles (d0, d1)[s0, s1] -> (d0 floordiv 5 floordiv 16 + s1, d1 * 128 floordiv 16 + s0) forall s0 in [0, 8), s1 in [0, 1){{$}}
// CHECK-NEXT: sync.dependency @qkv -> @attention operand 1 tiles (d0, d1)[s0, s1, s2] -> ((d0 floordiv 5 + s0 * 128) floordiv 16 + s2, (d1 * 128 + 256) floordiv 16 + s1) forall s0 in [0, 1), s1 in [0, 8), s2 in [0, 1){{$}}
// CHECK-NEXT: sync.dependency @qkv -> @attention operand 2 tiles (d0, d1)[s0, s1, s2] -> ((d0 floordiv 5 + s0 * 128) floordiv 16 + s2, (d1 * 128 + 512) floordiv 16 + s1) forall s0 in [0, 1), s1 in [0, 8), s2 in [0, 1){{$}}
// CHECK-NEXT: sync.dependency @attention -> @combine operand 0 tiles (d0, d1)[s0] -> (d0 * 5 + s0, d1) forall s0 in [0, 5){{$}}
// CHECK-NEXT: sync.dependency @attention -> @combine operand 1 tiles (d0, d1)[s0] -> (d0 * 5 + s0, d1) forall s0 in [0, 5){{$}}
// CHECK-NEXT: sync.dependency @combine -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 16 + s1, s0 * 128 floordiv 128) forall s0 in [0, 2), s1 in [0, 16) clipped{{$}}

// The chain's q · kᵀ reads k from QKV only: the chain refuses, naming the fused form.
// CHAIN: graph_to_stages_attention_kv_cache.mlir:{{[0-9]+}}:3: error: graph-to-stages: attention after a KV cache runs as the fused kernel (graph-to-stages{attention=fused}), which reads the caches; the chain's q · kᵀ reads k from QKV only
// CHAIN-NOT: Traceback

// SYNC: sync.stage @attention {{.*}} sync.verified = "proved"
// SYNC: sync.stage @combine {{.*}} sync.verified = "proved"
// SYNC: sync.stage @out {{.*}} sync.verified = "proved"
func.func @attention(%x: tensor<3x1x512xf16>, %wqkv: tensor<768x512xf16>, %wo: tensor<512x256xf16>, %kc: tensor<3x2x512x128xf16>, %vc: tensor<3x2x512x128xf16>) -> tensor<3x1x512xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<3x1x512xf16>, tensor<768x512xf16>) -> tensor<3x1x768xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<3x1x768xf16>) -> (tensor<3x1x256xf16>, tensor<3x1x256xf16>, tensor<3x1x256xf16>)
  %q4 = graph.reshape %q : (tensor<3x1x256xf16>) -> tensor<3x1x2x128xf16>
  %qh = graph.transpose %q4 perm [0, 2, 1, 3] : (tensor<3x1x2x128xf16>) -> tensor<3x2x1x128xf16>
  %k4 = graph.reshape %k : (tensor<3x1x256xf16>) -> tensor<3x1x2x128xf16>
  %kh = graph.transpose %k4 perm [0, 2, 1, 3] : (tensor<3x1x2x128xf16>) -> tensor<3x2x1x128xf16>
  %v4 = graph.reshape %v : (tensor<3x1x256xf16>) -> tensor<3x1x2x128xf16>
  %vh = graph.transpose %v4 perm [0, 2, 1, 3] : (tensor<3x1x2x128xf16>) -> tensor<3x2x1x128xf16>
  %ka = graph.concat %kc, %kh dim -2 : (tensor<3x2x512x128xf16>, tensor<3x2x1x128xf16>) -> tensor<3x2x513x128xf16>
  %va = graph.concat %vc, %vh dim -2 : (tensor<3x2x512x128xf16>, tensor<3x2x1x128xf16>) -> tensor<3x2x513x128xf16>
  %s = graph.linear %qh, %ka : (tensor<3x2x1x128xf16>, tensor<3x2x513x128xf16>) -> tensor<3x2x1x513xf16>
  %p = graph.softmax %s dim -1 scale 0.08838834764831845 : tensor<3x2x1x513xf16>
  %o = graph.matmul %p, %va : (tensor<3x2x1x513xf16>, tensor<3x2x513x128xf16>) -> tensor<3x2x1x128xf16>
  %ot = graph.transpose %o perm [0, 2, 1, 3] : (tensor<3x2x1x128xf16>) -> tensor<3x1x2x128xf16>
  %om = graph.reshape %ot : (tensor<3x1x2x128xf16>) -> tensor<3x1x256xf16>
  %y = graph.linear %om, %wo : (tensor<3x1x256xf16>, tensor<512x256xf16>) -> tensor<3x1x512xf16>
  func.return %y : tensor<3x1x512xf16>
}
