// RUN: tilesync-opt %s -p graph-to-stages --split-input-file | filecheck %s

// Weights stored in x out (Hugging Face's Conv1D: GPT-2's c_fc, c_proj, c_attn; K x N) are
// read through graph.transpose %w perm [1, 0], what torch.addmm(b, x, w) computes. The GEMMs
// take a weight N x K: graph-to-stages folds each such transpose of an argument into its
// binding, #graph.bind<transposed i> (the host transposes the argument once per version of
// it), and the stage program is the one of the untransposed weights.

// GPT-2's MLP (768 -> 3072 -> 768, biases, tanh GeLU) on 2 x 64 tokens, as
// graph_to_stages_mlp.mlir but for its weights' layout.
func.func @hf_gpt2_mlp(%x: tensor<2x64x768xf16>, %w1: tensor<768x3072xf16>, %b1: tensor<3072xf16>, %w2: tensor<3072x768xf16>, %b2: tensor<768xf16>) -> tensor<2x64x768xf16> {
  %w1t = graph.transpose %w1 perm [1, 0] : (tensor<768x3072xf16>) -> tensor<3072x768xf16>
  %h = graph.linear %x, %w1t, %b1 : (tensor<2x64x768xf16>, tensor<3072x768xf16>, tensor<3072xf16>) -> tensor<2x64x3072xf16>
  %a = graph.gelu %h approximate "tanh" : tensor<2x64x3072xf16>
  %w2t = graph.transpose %w2 perm [1, 0] : (tensor<3072x768xf16>) -> tensor<768x3072xf16>
  %y = graph.linear %a, %w2t, %b2 : (tensor<2x64x3072xf16>, tensor<768x3072xf16>, tensor<768xf16>) -> tensor<2x64x768xf16>
  func.return %y : tensor<2x64x768xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = (tensor<2x64x768xf16>, tensor<768x3072xf16>, tensor<3072xf16>, tensor<3072x768xf16>, tensor<768xf16>) -> tensor<2x64x768xf16>, graph.temps = [tensor<128x3072xf16>]} {
// CHECK-NOT:  graph.transpose
// CHECK:      gpu.func @gemm1(%A: !tile.tensor_map<64x64xf16, swizzle 128>, %B: !tile.tensor_map<64x64xf16, swizzle 128>, %C: !tile.tensor_map<64x64xf16, swizzle 128>, %bias: memref<3072xf16>) kernel
// CHECK:      gpu.func @gemm2(%A: !tile.tensor_map<64x64xf16, swizzle 128>, %B: !tile.tensor_map<64x64xf16, swizzle 128>, %C: !tile.tensor_map<64x64xf16, swizzle 128>, %bias: memref<768xf16>) kernel
// CHECK:      sync.stage @gemm1 {graph.bind = [#graph.bind<input 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<transposed 1 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<temp 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 2>], kernel = @gemm1_module::@gemm1, grid = array<i64: 2, 48>
// CHECK-NEXT: sync.stage @gemm2 {graph.bind = [#graph.bind<temp 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<transposed 3 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<result 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 4>], kernel = @gemm2_module::@gemm2, grid = array<i64: 2, 12>
// CHECK-NEXT: sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)

// -----

// GPT-2's causal attention through Conv1D projections: two sequences of 128 tokens, two heads
// of 64, biases; the QKV and output weights bound transposed, nothing else changes.
func.func @hf_gpt2_attention(%x: tensor<2x128x128xf16>, %wqkv: tensor<128x384xf16>, %bqkv: tensor<384xf16>, %wo: tensor<128x128xf16>, %bo: tensor<128xf16>) -> tensor<2x128x128xf16> {
  %wqkvt = graph.transpose %wqkv perm [1, 0] : (tensor<128x384xf16>) -> tensor<384x128xf16>
  %qkv = graph.linear %x, %wqkvt, %bqkv : (tensor<2x128x128xf16>, tensor<384x128xf16>, tensor<384xf16>) -> tensor<2x128x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<2x128x384xf16>) -> (tensor<2x128x128xf16>, tensor<2x128x128xf16>, tensor<2x128x128xf16>)
  %q4 = graph.reshape %q : (tensor<2x128x128xf16>) -> tensor<2x128x2x64xf16>
  %qh = graph.transpose %q4 perm [0, 2, 1, 3] : (tensor<2x128x2x64xf16>) -> tensor<2x2x128x64xf16>
  %k4 = graph.reshape %k : (tensor<2x128x128xf16>) -> tensor<2x128x2x64xf16>
  %kh = graph.transpose %k4 perm [0, 2, 1, 3] : (tensor<2x128x2x64xf16>) -> tensor<2x2x128x64xf16>
  %v4 = graph.reshape %v : (tensor<2x128x128xf16>) -> tensor<2x128x2x64xf16>
  %vh = graph.transpose %v4 perm [0, 2, 1, 3] : (tensor<2x128x2x64xf16>) -> tensor<2x2x128x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x2x128x64xf16>, tensor<2x2x128x64xf16>) -> tensor<2x2x128x128xf16>
  %p = graph.softmax %s dim -1 scale 0.125 causal : tensor<2x2x128x128xf16>
  %o = graph.matmul %p, %vh : (tensor<2x2x128x128xf16>, tensor<2x2x128x64xf16>) -> tensor<2x2x128x64xf16>
  %ot = graph.transpose %o perm [0, 2, 1, 3] : (tensor<2x2x128x64xf16>) -> tensor<2x128x2x64xf16>
  %om = graph.reshape %ot : (tensor<2x128x2x64xf16>) -> tensor<2x128x128xf16>
  %wot = graph.transpose %wo perm [1, 0] : (tensor<128x128xf16>) -> tensor<128x128xf16>
  %y = graph.linear %om, %wot, %bo : (tensor<2x128x128xf16>, tensor<128x128xf16>, tensor<128xf16>) -> tensor<2x128x128xf16>
  func.return %y : tensor<2x128x128xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = (tensor<2x128x128xf16>, tensor<128x384xf16>, tensor<384xf16>, tensor<128x128xf16>, tensor<128xf16>) -> tensor<2x128x128xf16>, graph.temps = [tensor<256x384xf16>, tensor<4x128x128xf16>, tensor<4x128x128xf16>, tensor<256x128xf16>]} {
// CHECK-NOT:  graph.transpose
// CHECK:      gpu.func @qkv(%A: memref<256x128xf16>, %B: memref<384x128xf16>, %C: memref<256x384xf16>, %bias: memref<384xf16>) kernel
// CHECK:      gpu.func @out(%A: memref<256x128xf16>, %B: memref<128x128xf16>, %C: memref<256x128xf16>, %bias: memref<128xf16>) kernel
// CHECK:      sync.stage @qkv {sync.wait_at_probe, graph.bind = [#graph.bind<input 0>, #graph.bind<transposed 1>, #graph.bind<temp 0>, #graph.bind<input 2>]
// CHECK-NEXT: sync.stage @scores {sync.wait_at_probe, graph.bind = [#graph.bind<temp 0>, #graph.bind<temp 0>, #graph.bind<temp 1>]
// CHECK-NEXT: sync.stage @softmax {sync.wait_at_probe, graph.bind = [#graph.bind<temp 1>, #graph.bind<temp 2>]
// CHECK-NEXT: sync.stage @context {sync.wait_at_probe, graph.bind = [#graph.bind<temp 2>, #graph.bind<temp 0>, #graph.bind<temp 3>]
// CHECK-NEXT: sync.stage @out {sync.wait_at_probe, graph.bind = [#graph.bind<temp 3>, #graph.bind<transposed 3>, #graph.bind<result 0>, #graph.bind<input 4>]
