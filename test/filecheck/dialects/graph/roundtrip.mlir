// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

// CHECK-LABEL: func.func @mlp
func.func @mlp(%x: tensor<4x16x64xf16>, %w1: tensor<256x64xf16>, %b1: tensor<256xf16>,
               %w2: tensor<64x256xf16>) -> tensor<4x16x64xf16> {
  // CHECK-NEXT: %h = graph.linear %x, %w1, %b1 : (tensor<4x16x64xf16>, tensor<256x64xf16>, tensor<256xf16>) -> tensor<4x16x256xf16>
  %h = graph.linear %x, %w1, %b1 : (tensor<4x16x64xf16>, tensor<256x64xf16>, tensor<256xf16>) -> tensor<4x16x256xf16>
  // CHECK-NEXT: %a = graph.gelu %h approximate "tanh" : tensor<4x16x256xf16>
  %a = graph.gelu %h approximate "tanh" : tensor<4x16x256xf16>
  // CHECK-NEXT: %y = graph.linear %a, %w2 : (tensor<4x16x256xf16>, tensor<64x256xf16>) -> tensor<4x16x64xf16>
  %y = graph.linear %a, %w2 : (tensor<4x16x256xf16>, tensor<64x256xf16>) -> tensor<4x16x64xf16>
  func.return %y : tensor<4x16x64xf16>
}

// CHECK-LABEL: func.func @swiglu
func.func @swiglu(%x: tensor<8x64xbf16>, %wg: tensor<128x64xbf16>, %wu: tensor<128x64xbf16>) -> tensor<8x128xbf16> {
  %g = graph.linear %x, %wg : (tensor<8x64xbf16>, tensor<128x64xbf16>) -> tensor<8x128xbf16>
  %u = graph.linear %x, %wu : (tensor<8x64xbf16>, tensor<128x64xbf16>) -> tensor<8x128xbf16>
  // CHECK: %s = graph.silu %g : tensor<8x128xbf16>
  %s = graph.silu %g : tensor<8x128xbf16>
  // CHECK-NEXT: %h = graph.mul %s, %u : tensor<8x128xbf16>
  %h = graph.mul %s, %u : tensor<8x128xbf16>
  // CHECK-NEXT: %r = graph.relu %h : tensor<8x128xbf16>
  %r = graph.relu %h : tensor<8x128xbf16>
  // CHECK-NEXT: %z = graph.add %r, %h : tensor<8x128xbf16>
  %z = graph.add %r, %h : tensor<8x128xbf16>
  func.return %z : tensor<8x128xbf16>
}

// nn.LayerNorm over the last dimension, its weight and bias (MeshGraphNets' MLPs end in one)
// CHECK-LABEL: func.func @norm
func.func @norm(%x: tensor<4x16x128xf16>, %g: tensor<128xf16>, %b: tensor<128xf16>) -> tensor<4x16x128xf16> {
  // CHECK-NEXT: %y = graph.layer_norm %x, %g, %b eps 1.000000e-05 : (tensor<4x16x128xf16>, tensor<128xf16>, tensor<128xf16>) -> tensor<4x16x128xf16>
  %y = graph.layer_norm %x, %g, %b eps 1.0e-05 : (tensor<4x16x128xf16>, tensor<128xf16>, tensor<128xf16>) -> tensor<4x16x128xf16>
  func.return %y : tensor<4x16x128xf16>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x16x32xf32>, %kt: tensor<32x16xf32>, %v: tensor<16x32xf32>) -> tensor<2x16x32xf32> {
  // CHECK-NEXT: %s = graph.matmul %q, %kt : (tensor<2x16x32xf32>, tensor<32x16xf32>) -> tensor<2x16x16xf32>
  %s = graph.matmul %q, %kt : (tensor<2x16x32xf32>, tensor<32x16xf32>) -> tensor<2x16x16xf32>
  // CHECK-NEXT: %p = graph.softmax %s dim -1 : tensor<2x16x16xf32>
  %p = graph.softmax %s dim -1 : tensor<2x16x16xf32>
  // a scale prints where it is not 1 (an f32: 1/sqrt(96) rounds)
  // CHECK-NEXT: %p8 = graph.softmax %s dim -1 scale 1.250000e-01 : tensor<2x16x16xf32>
  %p8 = graph.softmax %s dim -1 scale 0.125 : tensor<2x16x16xf32>
  // CHECK-NEXT: %p96 = graph.softmax %s dim -1 scale 0.102062076 : tensor<2x16x16xf32>
  %p96 = graph.softmax %s dim -1 scale 0.10206207261596575 : tensor<2x16x16xf32>
  // a causal mask (torch's is_causal: key j > query i excluded), with or without a scale
  // CHECK-NEXT: %pc = graph.softmax %s dim -1 scale 1.250000e-01 causal : tensor<2x16x16xf32>
  %pc = graph.softmax %s dim -1 scale 0.125 causal : tensor<2x16x16xf32>
  // CHECK-NEXT: %pc1 = graph.softmax %s dim 2 causal : tensor<2x16x16xf32>
  %pc1 = graph.softmax %s dim 2 causal : tensor<2x16x16xf32>
  // CHECK-NEXT: %o = graph.matmul %p, %v : (tensor<2x16x16xf32>, tensor<16x32xf32>) -> tensor<2x16x32xf32>
  %o = graph.matmul %p, %v : (tensor<2x16x16xf32>, tensor<16x32xf32>) -> tensor<2x16x32xf32>
  func.return %o : tensor<2x16x32xf32>
}

// CHECK-LABEL: func.func @self_attention
func.func @self_attention(%qkv: tensor<64x192xf16>) -> tensor<64x64xf16> {
  // CHECK-NEXT: %q, %k, %v = graph.split %qkv dim -1 : (tensor<64x192xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>)
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<64x192xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>)
  // CHECK-NEXT: %s = graph.linear %q, %k : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %s = graph.linear %q, %k : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %s : tensor<64x64xf16>
}

// CHECK-LABEL: func.func @conv_chain
func.func @conv_chain(%x: tensor<1x64x56x56xf16>, %w1: tensor<64x64x3x3xf16>, %w2: tensor<64x64x3x3xf16>, %b: tensor<64xf16>) -> (tensor<1x128x56x56xf16>, tensor<1x128xf16>) {
  // CHECK-NEXT: %c1 = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x56x56xf16>
  %c1 = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x56x56xf16>
  // CHECK-NEXT: %c2 = graph.conv2d %c1, %w2, %b stride [1, 1] padding [1, 1] : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>, tensor<64xf16>) -> tensor<1x64x56x56xf16>
  %c2 = graph.conv2d %c1, %w2, %b stride [1, 1] padding [1, 1] : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>, tensor<64xf16>) -> tensor<1x64x56x56xf16>
  // CHECK-NEXT: %cat = graph.concat %c1, %c2 dim 1 : (tensor<1x64x56x56xf16>, tensor<1x64x56x56xf16>) -> tensor<1x128x56x56xf16>
  %cat = graph.concat %c1, %c2 dim 1 : (tensor<1x64x56x56xf16>, tensor<1x64x56x56xf16>) -> tensor<1x128x56x56xf16>
  // CHECK-NEXT: %pool = graph.reduce_sum %cat dims [2, 3] : (tensor<1x128x56x56xf16>) -> tensor<1x128xf16>
  %pool = graph.reduce_sum %cat dims [2, 3] : (tensor<1x128x56x56xf16>) -> tensor<1x128xf16>
  func.return %cat, %pool : tensor<1x128x56x56xf16>, tensor<1x128xf16>
}

// Channels last: the filter is K x R x S x C, the result N x P x Q x K (the default NCHW
// prints without a layout).
// CHECK-LABEL: func.func @conv_nhwc
func.func @conv_nhwc(%x: tensor<2x8x8x64xf16>, %w: tensor<32x3x3x64xf16>, %b: tensor<32xf16>) -> tensor<2x8x8x32xf16> {
  // CHECK-NEXT: %y = graph.conv2d %x, %w, %b stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<2x8x8x64xf16>, tensor<32x3x3x64xf16>, tensor<32xf16>) -> tensor<2x8x8x32xf16>
  %y = graph.conv2d %x, %w, %b stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<2x8x8x64xf16>, tensor<32x3x3x64xf16>, tensor<32xf16>) -> tensor<2x8x8x32xf16>
  func.return %y : tensor<2x8x8x32xf16>
}

// The bindings of a lowered piece print and parse back.
// CHECK-LABEL: func.func private @bound() -> () attributes {binds = [#graph.bind<input 0>, #graph.bind<gate_up 1, 2>, #graph.bind<temp 0>, #graph.bind<result 0>]}
func.func private @bound() attributes {binds = [#graph.bind<input 0>, #graph.bind<gate_up 1, 2>, #graph.bind<temp 0>, #graph.bind<result 0>]}

// A binding of a TMA kernel's parameter carries the map's type (box, element, swizzle).
// CHECK-LABEL: func.func private @bound_map() -> () attributes {binds = [#graph.bind<input 0 as !tile.tensor_map<128x64xf16, swizzle 128>>, #graph.bind<gate_up 1, 2 as !tile.tensor_map<176x64xf16, swizzle 128>>, #graph.bind<result 0>]}
func.func private @bound_map() attributes {binds = [#graph.bind<input 0 as !tile.tensor_map<128x64xf16, swizzle 128>>, #graph.bind<gate_up 1, 2 as !tile.tensor_map<176x64xf16, swizzle 128>>, #graph.bind<result 0>]}

// A weight stored in x out (Hugging Face's Conv1D) bound as its N x K transpose, as it is and
// as a TMA map over it.
// CHECK-LABEL: func.func private @bound_transposed() -> () attributes {binds = [#graph.bind<input 0>, #graph.bind<transposed 1>, #graph.bind<transposed 3 as !tile.tensor_map<64x64xf16, swizzle 128>>]}
func.func private @bound_transposed() attributes {binds = [#graph.bind<input 0>, #graph.bind<transposed 1>, #graph.bind<transposed 3 as !tile.tensor_map<64x64xf16, swizzle 128>>]}

// A conv's filter read as the kernel's K x 9C matrix (`over`), with and without a tiled map
// encoded over it; an im2col map names its tensor in its type.
// CHECK-LABEL: func.func private @bound_over() -> () attributes {binds = [#graph.bind<input 0 as !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>>, #graph.bind<input 1 over [128, 576] as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 2 over [128, 576]>]}
func.func private @bound_over() attributes {binds = [#graph.bind<input 0 as !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>>, #graph.bind<input 1 over [128, 576] as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 2 over [128, 576]>]}

// Attention heads: the projection viewed as heads and transposed (q.view(T, H, D).transpose(0,
// 1)), q · kᵀ and P · v batch by batch, and the heads merged back.
// CHECK-LABEL: func.func @heads
func.func @heads(%q: tensor<64x256xf16>, %k: tensor<4x64x64xf16>, %v: tensor<4x64x64xf16>) -> tensor<64x256xf16> {
  // CHECK-NEXT: %r = graph.reshape %q : (tensor<64x256xf16>) -> tensor<64x4x64xf16>
  %r = graph.reshape %q : (tensor<64x256xf16>) -> tensor<64x4x64xf16>
  // CHECK-NEXT: %h = graph.transpose %r perm [1, 0, 2] : (tensor<64x4x64xf16>) -> tensor<4x64x64xf16>
  %h = graph.transpose %r perm [1, 0, 2] : (tensor<64x4x64xf16>) -> tensor<4x64x64xf16>
  // CHECK-NEXT: %s = graph.linear %h, %k : (tensor<4x64x64xf16>, tensor<4x64x64xf16>) -> tensor<4x64x64xf16>
  %s = graph.linear %h, %k : (tensor<4x64x64xf16>, tensor<4x64x64xf16>) -> tensor<4x64x64xf16>
  // CHECK-NEXT: %o = graph.matmul %s, %v : (tensor<4x64x64xf16>, tensor<4x64x64xf16>) -> tensor<4x64x64xf16>
  %o = graph.matmul %s, %v : (tensor<4x64x64xf16>, tensor<4x64x64xf16>) -> tensor<4x64x64xf16>
  // CHECK-NEXT: %m = graph.transpose %o perm [1, 0, 2] : (tensor<4x64x64xf16>) -> tensor<64x4x64xf16>
  %m = graph.transpose %o perm [1, 0, 2] : (tensor<4x64x64xf16>) -> tensor<64x4x64xf16>
  // CHECK-NEXT: %y = graph.reshape %m : (tensor<64x4x64xf16>) -> tensor<64x256xf16>
  %y = graph.reshape %m : (tensor<64x4x64xf16>) -> tensor<64x256xf16>
  func.return %y : tensor<64x256xf16>
}
