// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused}' | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused},sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC
// RUN: not tilesync-opt %s -p 'graph-to-stages{attention=flash}' 2>&1 | filecheck %s --check-prefix=BAD

// The batched causal attention of graph_to_stages_attention_batched.mlir (two sequences of 256
// tokens, two heads of 64) in the fused form: the QKV GEMM, one attention kernel (S and P in
// registers: no S or P temporaries), the output GEMM. The attention kernel reads QKV three
// times (q, k, v: one argument each, so each has its load points) and writes O as the chain's
// P · v does; a tile is (query block of 64 rows, head).

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = {{.*}}, graph.temps = [tensor<512x384xf16>, tensor<512x128xf16>]} {
// CHECK:      gpu.func @attention(%Q: memref<512x384xf16>, %K: memref<512x384xf16>, %V: memref<512x384xf16>, %O: memref<512x128xf16>) kernel
// CHECK:      sync.load_point operand 0 [%[[X:.*]], %[[Y:.*]]]{{$}}
// CHECK:      sync.load_point operand 1 [%[[X]], %[[Y]]] step
// CHECK:      sync.load_point operand 2 [%[[X]], %[[Y]]] step
// P · v reads P from registers: two accumulator tiles a 16-key A fragment, v N-major.
// CHECK:      tile.acc_to_a
// CHECK:      tile.wgmma_reg_a {{.*}} trans_b
// CHECK:      sync.store_point [%[[X]], %[[Y]]]
// CHECK-NEXT: gpu.return

// Causal, but its 16 blocks all resident at once: no tile order (heaviest_first).
// CHECK:      sync.stage @qkv {sync.wait_at_probe, graph.bind = [#graph.bind<input 0>, #graph.bind<input 1>, #graph.bind<temp 0>], kernel = @qkv_module::@qkv, grid = array<i64: 4, 6>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>}
// CHECK-NEXT: sync.stage @attention {sync.wait_at_probe, graph.bind = [#graph.bind<temp 0>, #graph.bind<temp 0>, #graph.bind<temp 0>, #graph.bind<temp 1>], kernel = @attention_module::@attention, grid = array<i64: 8, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
// CHECK-NEXT: sync.stage @out {sync.wait_at_probe, graph.bind = [#graph.bind<temp 1>, #graph.bind<input 2>, #graph.bind<result 0>], kernel = @out_module::@out, grid = array<i64: 4, 3>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>}
// q: the QKV tile row of the block's 64 rows (128 a tile), the head's 64 columns (64 a tile).
// CHECK-NEXT: sync.dependency @qkv -> @attention operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 64 floordiv 128 + s1, d1 * 64 floordiv 64 + s0) forall s0 in [0, 1), s1 in [0, 1)
// k and v of key block s0: the sequence's first row (d0 * 64 floordiv 256 * 256) plus 64 s0,
// the head's columns after q's (C = 128) and after k's.
// CHECK-NEXT: sync.dependency @qkv -> @attention operand 1 tiles (d0, d1)[s0, s1, s2] -> ((d0 * 64 floordiv 256 * 256 + s0 * 64) floordiv 128 + s2, (d1 * 64 + 128) floordiv 64 + s1) forall s0 in [0, 4), s1 in [0, 1), s2 in [0, 1)
// CHECK-NEXT: sync.dependency @qkv -> @attention operand 2 tiles (d0, d1)[s0, s1, s2] -> ((d0 * 64 floordiv 256 * 256 + s0 * 64) floordiv 128 + s2, (d1 * 64 + 256) floordiv 64 + s1) forall s0 in [0, 4), s1 in [0, 1), s2 in [0, 1)
// The output GEMM's k-step s0 reads head s0 (64 columns each); its 128-row tile two blocks.
// CHECK-NEXT: sync.dependency @attention -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 128 floordiv 64 + s1, s0 * 64 floordiv 64) forall s0 in [0, 2), s1 in [0, 2)
// CHECK-NEXT: sync.launch @qkv {priority = -2 : i64}
// CHECK-NEXT: sync.launch @attention {stream = 1 : i64, priority = -1 : i64}
// CHECK-NEXT: sync.launch @out {stream = 2 : i64}

// The attention stage waits at its probe: its tile waits for the QKV tiles of q and of every
// key block's k and v at once, before the k-loop (the waits it guards never run).
// SYNC-LABEL: gpu.func @attention(
// SYNC:         %ready_qkv = sync.probe %sems_qkv{{.*}} until_ready : memref<?xi32>
// SYNC-NOT:     sync.probe
// SYNC:         sync.wait %sems_qkv{{.*}} unless %ready_qkv
// SYNC:      sync.stage @qkv {{.*}}sync.verified = "proved"
// SYNC:      sync.stage @attention {{.*}}sync.progress = "@qkv: programmatic dependent launch", sync.verified = "proved"
// SYNC:      sync.stage @out {{.*}}sync.progress = "@attention: programmatic dependent launch", sync.verified = "proved"

// BAD: option 'attention' must be one of chain, fused, got 'flash'

func.func @attention(%x: tensor<2x256x192xf16>, %wqkv: tensor<384x192xf16>, %wo: tensor<192x128xf16>) -> tensor<2x256x192xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<2x256x192xf16>, tensor<384x192xf16>) -> tensor<2x256x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<2x256x384xf16>) -> (tensor<2x256x128xf16>, tensor<2x256x128xf16>, tensor<2x256x128xf16>)
  %q4 = graph.reshape %q : (tensor<2x256x128xf16>) -> tensor<2x256x2x64xf16>
  %qh = graph.transpose %q4 perm [0, 2, 1, 3] : (tensor<2x256x2x64xf16>) -> tensor<2x2x256x64xf16>
  %k4 = graph.reshape %k : (tensor<2x256x128xf16>) -> tensor<2x256x2x64xf16>
  %kh = graph.transpose %k4 perm [0, 2, 1, 3] : (tensor<2x256x2x64xf16>) -> tensor<2x2x256x64xf16>
  %v4 = graph.reshape %v : (tensor<2x256x128xf16>) -> tensor<2x256x2x64xf16>
  %vh = graph.transpose %v4 perm [0, 2, 1, 3] : (tensor<2x256x2x64xf16>) -> tensor<2x2x256x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>) -> tensor<2x2x256x256xf16>
  %p = graph.softmax %s dim -1 scale 0.125 causal : tensor<2x2x256x256xf16>
  %o = graph.matmul %p, %vh : (tensor<2x2x256x256xf16>, tensor<2x2x256x64xf16>) -> tensor<2x2x256x64xf16>
  %ot = graph.transpose %o perm [0, 2, 1, 3] : (tensor<2x2x256x64xf16>) -> tensor<2x256x2x64xf16>
  %om = graph.reshape %ot : (tensor<2x256x2x64xf16>) -> tensor<2x256x128xf16>
  %y = graph.linear %om, %wo : (tensor<2x256x128xf16>, tensor<192x128xf16>) -> tensor<2x256x192xf16>
  func.return %y : tensor<2x256x192xf16>
}
