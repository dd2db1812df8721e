// RUN: tilesync-opt %s -p 'graph-to-stages{persistent=true}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages{persistent=true},sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=SYNC

// LLaMA's MLP on 1024 tokens (1024 -> 2816 -> 1024) with persistent=true: the TMA GEMMs
// without sync hooks, so each is a persistent grid (at most a block an SM) walking its tiles;
// GEMM1 as its tall twin (256 x 176 tiles, two warpgroups of 128 rows: one round of 128 tiles,
// where the 128-row tiles take two of 256; kernels.mlp.persistent_spec), GEMM2 as without
// persistent=true (all 128 of its tiles); no dependency, and both launches on stream 0 without
// PDL: GEMM2 starts once GEMM1 has ended. The cuSync passes find nothing to do.
func.func @llama_mlp(%x: tensor<1024x1024xf16>, %wg: tensor<2816x1024xf16>, %wu: tensor<2816x1024xf16>, %wd: tensor<1024x2816xf16>) -> tensor<1024x1024xf16> {
  %g = graph.linear %x, %wg : (tensor<1024x1024xf16>, tensor<2816x1024xf16>) -> tensor<1024x2816xf16>
  %u = graph.linear %x, %wu : (tensor<1024x1024xf16>, tensor<2816x1024xf16>) -> tensor<1024x2816xf16>
  %s = graph.silu %g : tensor<1024x2816xf16>
  %h = graph.mul %u, %s : tensor<1024x2816xf16>
  %y = graph.linear %h, %wd : (tensor<1024x2816xf16>, tensor<1024x2816xf16>) -> tensor<1024x1024xf16>
  func.return %y : tensor<1024x1024xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = {{.*}}, graph.temps = [tensor<1024x2816xf16>]} {
// No hooks (without persistent=true: sync.tile, sync.load_point and sync.store_point in both).
// CHECK:      gpu.func @gemm1(
// CHECK-NOT:  {{ sync\.(tile|load_point|store_point)}}
// CHECK:      gpu.func @gemm2(
// CHECK-NOT:  {{ sync\.(tile|load_point|store_point)}}
// CHECK:      sync.stage @gemm1 {graph.bind = [#graph.bind<input 0 as !tile.tensor_map<256x64xf16, swizzle 128>>, #graph.bind<gate_up 1, 2 as !tile.tensor_map<176x64xf16, swizzle 128>>, #graph.bind<temp 0 as !tile.tensor_map<64x8xf16, swizzle 0>>], kernel = @gemm1_module::@gemm1, grid = array<i64: 128, 1>, block = array<i64: 384, 1, 1>, tile = array<i64: 256, 88, 64>}
// CHECK-NEXT: sync.stage @gemm2 {graph.bind = [#graph.bind<temp 0 as !tile.tensor_map<128x64xf16, swizzle 128>>, #graph.bind<input 3 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<result 0 as !tile.tensor_map<64x64xf16, swizzle 128>>], kernel = @gemm2_module::@gemm2, grid = array<i64: 128, 1>, block = array<i64: 384, 1, 1>, tile = array<i64: 128, 64, 64>}
// CHECK-NEXT: sync.launch @gemm1
// CHECK-NEXT: sync.launch @gemm2
// CHECK-NEXT: }

// SYNC-NOT:   sync.dependency
// SYNC-NOT:   pdl
// SYNC:       sync.launch @gemm1
// SYNC-NEXT:  sync.launch @gemm2
// SYNC-NEXT:  }

// -----

// Fewer rows than the TMA GEMMs take: no persistent form.
func.func @small(%x: tensor<32x512xf16>, %w1: tensor<1024x512xf16>, %w2: tensor<512x1024xf16>) -> tensor<32x512xf16> {
  %h = graph.linear %x, %w1 : (tensor<32x512xf16>, tensor<1024x512xf16>) -> tensor<32x1024xf16>
  %y = graph.linear %h, %w2 : (tensor<32x1024xf16>, tensor<512x1024xf16>) -> tensor<32x512xf16>
  func.return %y : tensor<32x512xf16>
}
// CHECK: graph-to-stages: persistent=true needs the TMA GEMMs, from 64 rows; this MLP has 32

// -----

// Attention's kernels run a block a tile: no persistent form.
func.func @attention(%x: tensor<64x64xf16>, %wqkv: tensor<192x64xf16>, %wo: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<64x64xf16>, tensor<192x64xf16>) -> tensor<64x192xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<64x192xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>)
  %s = graph.linear %q, %k : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %p = graph.softmax %s dim -1 : tensor<64x64xf16>
  %o = graph.matmul %p, %v : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %y = graph.linear %o, %wo : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}
// CHECK: graph-to-stages: persistent=true takes an MLP or a conv chain of TMA convs: attention's kernels run a block a tile
