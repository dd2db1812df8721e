// RUN: tilesync-opt %s -p graph-to-stages --split-input-file --verify-diagnostics | filecheck %s

// Pieces graph-to-stages refuses, each with the op concerned.

func.func @relu_mlp(%x: tensor<16x64xf16>, %w1: tensor<128x64xf16>, %w2: tensor<64x128xf16>) -> tensor<16x64xf16> {
  %h = graph.linear %x, %w1 : (tensor<16x64xf16>, tensor<128x64xf16>) -> tensor<16x128xf16>
  %a = graph.relu %h : tensor<16x128xf16>
  %y = graph.linear %a, %w2 : (tensor<16x128xf16>, tensor<64x128xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: no GEMM epilogue computes graph.relu

// -----

func.func @erf_gelu(%x: tensor<16x64xf16>, %w1: tensor<128x64xf16>, %w2: tensor<64x128xf16>) -> tensor<16x64xf16> {
  %h = graph.linear %x, %w1 : (tensor<16x64xf16>, tensor<128x64xf16>) -> tensor<16x128xf16>
  %a = graph.gelu %h approximate "none" : tensor<16x128xf16>
  %y = graph.linear %a, %w2 : (tensor<16x128xf16>, tensor<64x128xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: the GEMM epilogue computes GeLU's tanh approximation; an exact (erf) GeLU stays in torch

// -----

func.func @fp32(%x: tensor<16x64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>) -> tensor<16x64xf32> {
  %h = graph.linear %x, %w1 : (tensor<16x64xf32>, tensor<128x64xf32>) -> tensor<16x128xf32>
  %y = graph.linear %h, %w2 : (tensor<16x128xf32>, tensor<64x128xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}
// CHECK: graph-to-stages: the generated kernels take f16 or bf16, not f32

// -----

func.func @odd_width(%x: tensor<16x64xf16>, %w1: tensor<96x64xf16>, %w2: tensor<64x96xf16>) -> tensor<16x64xf16> {
  %h = graph.linear %x, %w1 : (tensor<16x64xf16>, tensor<96x64xf16>) -> tensor<16x96xf16>
  %y = graph.linear %h, %w2 : (tensor<16x96xf16>, tensor<64x96xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: the hidden width 96 is not a multiple of 64 (the GEMMs' k-tile and the dependency's step)

// -----

func.func @hidden_escapes(%x: tensor<16x64xf16>, %w1: tensor<128x64xf16>, %w2: tensor<64x128xf16>) -> tensor<16x64xf16> {
  %h = graph.linear %x, %w1 : (tensor<16x64xf16>, tensor<128x64xf16>) -> tensor<16x128xf16>
  %a = graph.gelu %h approximate "tanh" : tensor<16x128xf16>
  %b = graph.add %a, %a : tensor<16x128xf16>
  %y = graph.linear %a, %w2 : (tensor<16x128xf16>, tensor<64x128xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: graph.gelu's result is used 3 times; the pattern keeps it inside the piece

// -----

func.func @weight_computed(%x: tensor<16x64xf16>, %w1: tensor<128x64xf16>, %w2: tensor<64x128xf16>) -> tensor<16x64xf16> {
  %h = graph.linear %x, %w1 : (tensor<16x64xf16>, tensor<128x64xf16>) -> tensor<16x128xf16>
  %w = graph.add %w2, %w2 : tensor<64x128xf16>
  %y = graph.linear %h, %w : (tensor<16x128xf16>, tensor<64x128xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: the second weight must be an argument of @weight_computed (weights are the piece's inputs)

// -----

func.func @softmax(%x: tensor<16x64xf16>) -> tensor<16x64xf16> {
  %y = graph.softmax %x dim -1 : tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: the result must come from graph.linear, found graph.softmax

// -----

// Attention: the softmax kernel is f16 only.
func.func @attention_bf16(%x: tensor<64x64xbf16>, %wqkv: tensor<192x64xbf16>, %wo: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<64x64xbf16>, tensor<192x64xbf16>) -> tensor<64x192xbf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<64x192xbf16>) -> (tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>)
  %s = graph.linear %q, %k : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
  // CHECK: graph_to_stages_invalid.mlir:78:3: graph-to-stages: the softmax kernel takes f16, not bf16
  %p = graph.softmax %s dim -1 : tensor<64x64xbf16>
  %o = graph.matmul %p, %v : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
  %y = graph.linear %o, %wo : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
  func.return %y : tensor<64x64xbf16>
}

// -----

// Attention: softmax over the queries is not attention's.
func.func @attention_dim0(%x: tensor<64x64xf16>, %wqkv: tensor<192x64xf16>, %wo: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<64x64xf16>, tensor<192x64xf16>) -> tensor<64x192xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<64x192xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>)
  %s = graph.linear %q, %k : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  // CHECK: graph_to_stages_invalid.mlir:92:3: graph-to-stages: attention's softmax runs along the keys (dim -1)
  %p = graph.softmax %s dim 0 : tensor<64x64xf16>
  %o = graph.matmul %p, %v : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %y = graph.linear %o, %wo : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}

// -----

// Attention: q and k swapped.
func.func @attention_swapped(%x: tensor<64x64xf16>, %wqkv: tensor<192x64xf16>, %wo: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<64x64xf16>, tensor<192x64xf16>) -> tensor<64x192xf16>
  // CHECK: graph_to_stages_invalid.mlir:104:3: graph-to-stages: attention splits the QKV projection into q, k, v, in that order, and computes softmax(q · kᵀ) · v
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<64x192xf16>) -> (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>)
  %s = graph.linear %k, %q : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %p = graph.softmax %s dim -1 : tensor<64x64xf16>
  %o = graph.matmul %p, %v : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %y = graph.linear %o, %wo : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}

// -----

// Attention: a token count the softmax kernel does not take.
func.func @attention_tokens(%x: tensor<48x64xf16>, %wqkv: tensor<192x64xf16>, %wo: tensor<64x64xf16>) -> tensor<48x64xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<48x64xf16>, tensor<192x64xf16>) -> tensor<48x192xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<48x192xf16>) -> (tensor<48x64xf16>, tensor<48x64xf16>, tensor<48x64xf16>)
  %s = graph.linear %q, %k : (tensor<48x64xf16>, tensor<48x64xf16>) -> tensor<48x48xf16>
  %p = graph.softmax %s dim -1 : tensor<48x48xf16>
  %o = graph.matmul %p, %v : (tensor<48x48xf16>, tensor<48x64xf16>) -> tensor<48x64xf16>
  // CHECK: graph_to_stages_invalid.mlir:122:3: graph-to-stages: 48 tokens: the softmax kernel takes a multiple of 32 up to 4096
  %y = graph.linear %o, %wo : (tensor<48x64xf16>, tensor<64x64xf16>) -> tensor<48x64xf16>
  func.return %y : tensor<48x64xf16>
}

// -----

// Conv chain: PyTorch's NCHW; the implicit-GEMM kernel computes channels last.
func.func @conv_nchw(%x: tensor<1x64x8x8xf16>, %w1: tensor<64x64x3x3xf16>, %w2: tensor<64x64x3x3xf16>) -> tensor<1x64x8x8xf16> {
  %h = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] : (tensor<1x64x8x8xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x8x8xf16>
  // CHECK: graph_to_stages_invalid.mlir:132:3: graph-to-stages: graph.conv2d in NCHW: the implicit-GEMM kernel reads channels-last activations and K x R x S x C filters; give the piece NHWC tensors (layout "NHWC"), transposed at its boundary
  %y = graph.conv2d %h, %w2 stride [1, 1] padding [1, 1] : (tensor<1x64x8x8xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x8x8xf16>
  func.return %y : tensor<1x64x8x8xf16>
}

// -----

// Conv chain: the kernel's filters are 3x3 at stride 1.
func.func @conv_stride(%x: tensor<1x16x16x64xf16>, %w1: tensor<64x3x3x64xf16>, %w2: tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16> {
  // CHECK: graph_to_stages_invalid.mlir:141:3: graph-to-stages: the conv kernel computes 3x3 filters at stride 1, padding 1, not 3x3 at stride [2, 2], padding [1, 1]
  %h = graph.conv2d %x, %w1 stride [2, 2] padding [1, 1] layout "NHWC" : (tensor<1x16x16x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16>
  %y = graph.conv2d %h, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16>
  func.return %y : tensor<1x8x8x64xf16>
}

// -----

// Conv chain: no epilogue computes GeLU between the convs.
func.func @conv_gelu(%x: tensor<1x8x8x64xf16>, %w1: tensor<64x3x3x64xf16>, %w2: tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16> {
  %h = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16>
  // CHECK: graph_to_stages_invalid.mlir:152:3: graph-to-stages: between the convs the kernel's epilogue computes bias and ReLU, not graph.gelu
  %a = graph.gelu %h approximate "tanh" : tensor<1x8x8x64xf16>
  %y = graph.conv2d %a, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16>
  func.return %y : tensor<1x8x8x64xf16>
}

// -----

// Conv chain: bf16 (the conv kernel is f16 only).
func.func @conv_bf16(%x: tensor<1x8x8x64xbf16>, %w1: tensor<64x3x3x64xbf16>, %w2: tensor<64x3x3x64xbf16>) -> tensor<1x8x8x64xbf16> {
  // CHECK: graph_to_stages_invalid.mlir:162:3: graph-to-stages: the conv kernel takes f16, not bf16
  %h = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xbf16>, tensor<64x3x3x64xbf16>) -> tensor<1x8x8x64xbf16>
  %y = graph.conv2d %h, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xbf16>, tensor<64x3x3x64xbf16>) -> tensor<1x8x8x64xbf16>
  func.return %y : tensor<1x8x8x64xbf16>
}

// -----

// Conv chain: 32 middle channels (the second conv's k-tile is 64).
func.func @conv_channels(%x: tensor<1x8x8x64xf16>, %w1: tensor<32x3x3x64xf16>, %w2: tensor<64x3x3x32xf16>) -> tensor<1x8x8x64xf16> {
  %h = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<32x3x3x64xf16>) -> tensor<1x8x8x32xf16>
  // CHECK: graph_to_stages_invalid.mlir:173:3: graph-to-stages: the middle activation has 32 channels, not a multiple of 64 (the second conv's k-tile and the dependency's step)
  %y = graph.conv2d %h, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x32xf16>, tensor<64x3x3x32xf16>) -> tensor<1x8x8x64xf16>
  func.return %y : tensor<1x8x8x64xf16>
}

// -----

// Conv chain: 28x28 images (784 pixels) straddle tiles of 64 and of 128 pixels.
func.func @conv_straddle(%x: tensor<1x28x28x64xf16>, %w1: tensor<64x3x3x64xf16>, %w2: tensor<64x3x3x64xf16>) -> tensor<1x28x28x64xf16> {
  %h = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x28x28x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x28x28x64xf16>
  // CHECK: graph_to_stages_invalid.mlir:183:3: graph-to-stages: 28x28 images: output tiles of 64 or 128 pixels straddle images (the halo then reaches whole images)
  %y = graph.conv2d %h, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x28x28x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x28x28x64xf16>
  func.return %y : tensor<1x28x28x64xf16>
}

// -----

// Conv chain: the middle activation is read outside the piece.
func.func @conv_escapes(%x: tensor<1x8x8x64xf16>, %w1: tensor<64x3x3x64xf16>, %w2: tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16> {
  // CHECK: graph_to_stages_invalid.mlir:192:3: graph-to-stages: graph.conv2d's result is used 2 times; the pattern keeps it inside the piece
  %h = graph.conv2d %x, %w1 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16>
  %z = graph.relu %h : tensor<1x8x8x64xf16>
  %y = graph.conv2d %h, %w2 stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16>
  func.return %y : tensor<1x8x8x64xf16>
}

// -----

// Two graph functions: the error points at the second.
func.func @a(%x: tensor<16x64xf16>) -> tensor<16x64xf16> {
  func.return %x : tensor<16x64xf16>
}
func.func @b(%x: tensor<16x64xf16>) -> tensor<16x64xf16> {
  func.return %x : tensor<16x64xf16>
}
// CHECK: graph_to_stages_invalid.mlir:[[# @LINE - 3]]:1: graph-to-stages: lowers one graph function per module (with a body), found 2

// -----

// Only a declaration: it has no body to lower.
func.func private @mlp(%x: tensor<16x64xf16>) -> tensor<16x64xf16>
// CHECK: graph_to_stages_invalid.mlir:[[# @LINE - 1]]:1: graph-to-stages: lowers one graph function per module (with a body), found 0

// -----

// Attention heads: q viewed with its columns and tokens swapped (perm [1, 2, 0]).
func.func @heads_perm(%x: tensor<64x128xf16>, %wqkv: tensor<384x128xf16>, %wo: tensor<128x128xf16>) -> tensor<64x128xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<64x128xf16>, tensor<384x128xf16>) -> tensor<64x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<64x384xf16>) -> (tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>)
  %q4 = graph.reshape %q : (tensor<64x128xf16>) -> tensor<64x2x64xf16>
  %qh = graph.transpose %q4 perm [1, 2, 0] : (tensor<64x2x64xf16>) -> tensor<2x64x64xf16>
  %k4 = graph.reshape %k : (tensor<64x128xf16>) -> tensor<64x2x64xf16>
  %kh = graph.transpose %k4 perm [1, 0, 2] : (tensor<64x2x64xf16>) -> tensor<2x64x64xf16>
  %v4 = graph.reshape %v : (tensor<64x128xf16>) -> tensor<64x2x64xf16>
  %vh = graph.transpose %v4 perm [1, 0, 2] : (tensor<64x2x64xf16>) -> tensor<2x64x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x64x64xf16>, tensor<2x64x64xf16>) -> tensor<2x64x64xf16>
  %p = graph.softmax %s dim -1 scale 0.125 : tensor<2x64x64xf16>
  %o = graph.matmul %p, %vh : (tensor<2x64x64xf16>, tensor<2x64x64xf16>) -> tensor<2x64x64xf16>
  %ot = graph.transpose %o perm [1, 0, 2] : (tensor<2x64x64xf16>) -> tensor<64x2x64xf16>
  %om = graph.reshape %ot : (tensor<64x2x64xf16>) -> tensor<64x128xf16>
  %y = graph.linear %om, %wo : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16>
  func.return %y : tensor<64x128xf16>
}
// CHECK: graph-to-stages: q's heads are x.view(T, H, D).transpose(0, 1) (perm [1, 0, 2]; a batch: x.view(B, T, H, D).transpose(1, 2), perm [0, 2, 1, 3])

// -----

// Heads that the output linear reads without merging them back.
func.func @heads_unmerged(%x: tensor<128x128xf16>, %wqkv: tensor<384x128xf16>, %wo: tensor<128x64xf16>) -> tensor<2x128x128xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<128x128xf16>, tensor<384x128xf16>) -> tensor<128x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<128x384xf16>) -> (tensor<128x128xf16>, tensor<128x128xf16>, tensor<128x128xf16>)
  %q4 = graph.reshape %q : (tensor<128x128xf16>) -> tensor<128x2x64xf16>
  %qh = graph.transpose %q4 perm [1, 0, 2] : (tensor<128x2x64xf16>) -> tensor<2x128x64xf16>
  %k4 = graph.reshape %k : (tensor<128x128xf16>) -> tensor<128x2x64xf16>
  %kh = graph.transpose %k4 perm [1, 0, 2] : (tensor<128x2x64xf16>) -> tensor<2x128x64xf16>
  %v4 = graph.reshape %v : (tensor<128x128xf16>) -> tensor<128x2x64xf16>
  %vh = graph.transpose %v4 perm [1, 0, 2] : (tensor<128x2x64xf16>) -> tensor<2x128x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x128x64xf16>, tensor<2x128x64xf16>) -> tensor<2x128x128xf16>
  %p = graph.softmax %s dim -1 : tensor<2x128x128xf16>
  %o = graph.matmul %p, %vh : (tensor<2x128x128xf16>, tensor<2x128x64xf16>) -> tensor<2x128x64xf16>
  %y = graph.linear %o, %wo : (tensor<2x128x64xf16>, tensor<128x64xf16>) -> tensor<2x128x128xf16>
  func.return %y : tensor<2x128x128xf16>
}
// CHECK: graph-to-stages: q, k and v are viewed as the same number of heads, and the heads merge back before the output linear

// -----

// Heads over 160 tokens: a tile of q · kᵀ (128 rows) would straddle two heads.
func.func @heads_tokens(%x: tensor<160x192xf16>, %wqkv: tensor<384x192xf16>, %wo: tensor<192x128xf16>) -> tensor<160x192xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<160x192xf16>, tensor<384x192xf16>) -> tensor<160x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<160x384xf16>) -> (tensor<160x128xf16>, tensor<160x128xf16>, tensor<160x128xf16>)
  %q4 = graph.reshape %q : (tensor<160x128xf16>) -> tensor<160x2x64xf16>
  %qh = graph.transpose %q4 perm [1, 0, 2] : (tensor<160x2x64xf16>) -> tensor<2x160x64xf16>
  %k4 = graph.reshape %k : (tensor<160x128xf16>) -> tensor<160x2x64xf16>
  %kh = graph.transpose %k4 perm [1, 0, 2] : (tensor<160x2x64xf16>) -> tensor<2x160x64xf16>
  %v4 = graph.reshape %v : (tensor<160x128xf16>) -> tensor<160x2x64xf16>
  %vh = graph.transpose %v4 perm [1, 0, 2] : (tensor<160x2x64xf16>) -> tensor<2x160x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x160x64xf16>, tensor<2x160x64xf16>) -> tensor<2x160x160xf16>
  %p = graph.softmax %s dim -1 scale 0.125 : tensor<2x160x160xf16>
  %o = graph.matmul %p, %vh : (tensor<2x160x160xf16>, tensor<2x160x64xf16>) -> tensor<2x160x64xf16>
  %ot = graph.transpose %o perm [1, 0, 2] : (tensor<2x160x64xf16>) -> tensor<160x2x64xf16>
  %om = graph.reshape %ot : (tensor<160x2x64xf16>) -> tensor<160x128xf16>
  %y = graph.linear %om, %wo : (tensor<160x128xf16>, tensor<192x128xf16>) -> tensor<160x192xf16>
  func.return %y : tensor<160x192xf16>
}
// CHECK: graph-to-stages: 160 tokens with 2 heads: a tile of q · kᵀ is one head's, so 128 rows a tile must divide T

// -----

// Heads of 32 columns: a k-step of 64 would read two heads.
func.func @heads_width(%x: tensor<256x192xf16>, %wqkv: tensor<192x192xf16>, %wo: tensor<192x64xf16>) -> tensor<256x192xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<256x192xf16>, tensor<192x192xf16>) -> tensor<256x192xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<256x192xf16>) -> (tensor<256x64xf16>, tensor<256x64xf16>, tensor<256x64xf16>)
  %q4 = graph.reshape %q : (tensor<256x64xf16>) -> tensor<256x2x32xf16>
  %qh = graph.transpose %q4 perm [1, 0, 2] : (tensor<256x2x32xf16>) -> tensor<2x256x32xf16>
  %k4 = graph.reshape %k : (tensor<256x64xf16>) -> tensor<256x2x32xf16>
  %kh = graph.transpose %k4 perm [1, 0, 2] : (tensor<256x2x32xf16>) -> tensor<2x256x32xf16>
  %v4 = graph.reshape %v : (tensor<256x64xf16>) -> tensor<256x2x32xf16>
  %vh = graph.transpose %v4 perm [1, 0, 2] : (tensor<256x2x32xf16>) -> tensor<2x256x32xf16>
  %s = graph.linear %qh, %kh : (tensor<2x256x32xf16>, tensor<2x256x32xf16>) -> tensor<2x256x256xf16>
  %p = graph.softmax %s dim -1 scale 0.1767766952966369 : tensor<2x256x256xf16>
  %o = graph.matmul %p, %vh : (tensor<2x256x256xf16>, tensor<2x256x32xf16>) -> tensor<2x256x32xf16>
  %ot = graph.transpose %o perm [1, 0, 2] : (tensor<2x256x32xf16>) -> tensor<256x2x32xf16>
  %om = graph.reshape %ot : (tensor<256x2x32xf16>) -> tensor<256x64xf16>
  %y = graph.linear %om, %wo : (tensor<256x64xf16>, tensor<192x64xf16>) -> tensor<256x192xf16>
  func.return %y : tensor<256x192xf16>
}
// CHECK: graph-to-stages: the head width 32 is not a multiple of 64 (the GEMMs' k-tile and the dependency's step)

// -----

// An MLP whose linear takes a weight per batch (attention's q · kᵀ form), not a layer's.
func.func @batched_mlp(%x: tensor<2x16x64xf16>, %w1: tensor<2x128x64xf16>, %w2: tensor<64x128xf16>) -> tensor<2x16x64xf16> {
  %h = graph.linear %x, %w1 : (tensor<2x16x64xf16>, tensor<2x128x64xf16>) -> tensor<2x16x128xf16>
  %y = graph.linear %h, %w2 : (tensor<2x16x128xf16>, tensor<64x128xf16>) -> tensor<2x16x64xf16>
  func.return %y : tensor<2x16x64xf16>
}
// CHECK: graph-to-stages: an MLP's linears take weight matrices, not one per batch

// -----

// k's heads viewed from a tensor that is not tokens x width.
func.func @heads_view(%x: tensor<128x128xf16>, %wqkv: tensor<384x128xf16>, %wo: tensor<128x128xf16>, %k3: tensor<128x2x64xf16>) -> tensor<128x128xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<128x128xf16>, tensor<384x128xf16>) -> tensor<128x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<128x384xf16>) -> (tensor<128x128xf16>, tensor<128x128xf16>, tensor<128x128xf16>)
  %q4 = graph.reshape %q : (tensor<128x128xf16>) -> tensor<128x2x64xf16>
  %qh = graph.transpose %q4 perm [1, 0, 2] : (tensor<128x2x64xf16>) -> tensor<2x128x64xf16>
  %k4 = graph.reshape %k3 : (tensor<128x2x64xf16>) -> tensor<128x2x64xf16>
  %kh = graph.transpose %k4 perm [1, 0, 2] : (tensor<128x2x64xf16>) -> tensor<2x128x64xf16>
  %v4 = graph.reshape %v : (tensor<128x128xf16>) -> tensor<128x2x64xf16>
  %vh = graph.transpose %v4 perm [1, 0, 2] : (tensor<128x2x64xf16>) -> tensor<2x128x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x128x64xf16>, tensor<2x128x64xf16>) -> tensor<2x128x128xf16>
  %p = graph.softmax %s dim -1 : tensor<2x128x128xf16>
  %o = graph.matmul %p, %vh : (tensor<2x128x128xf16>, tensor<2x128x64xf16>) -> tensor<2x128x64xf16>
  %ot = graph.transpose %o perm [1, 0, 2] : (tensor<2x128x64xf16>) -> tensor<128x2x64xf16>
  %om = graph.reshape %ot : (tensor<128x2x64xf16>) -> tensor<128x128xf16>
  %y = graph.linear %om, %wo : (tensor<128x128xf16>, tensor<128x128xf16>) -> tensor<128x128xf16>
  func.return %y : tensor<128x128xf16>
}
// CHECK: graph-to-stages: k views [batch x] tokens x width as [batch x] tokens x heads x (width / heads), got [128, 2, 64] -> [128, 2, 64]

// -----

// A batch of two sequences of 96 tokens: a tile of 128 rows would straddle them.
func.func @batch_tokens(%x: tensor<2x96x128xf16>, %wqkv: tensor<384x128xf16>, %wo: tensor<128x128xf16>) -> tensor<2x96x128xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<2x96x128xf16>, tensor<384x128xf16>) -> tensor<2x96x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<2x96x384xf16>) -> (tensor<2x96x128xf16>, tensor<2x96x128xf16>, tensor<2x96x128xf16>)
  %s = graph.linear %q, %k : (tensor<2x96x128xf16>, tensor<2x96x128xf16>) -> tensor<2x96x96xf16>
  %p = graph.softmax %s dim -1 causal : tensor<2x96x96xf16>
  %o = graph.matmul %p, %v : (tensor<2x96x96xf16>, tensor<2x96x128xf16>) -> tensor<2x96x128xf16>
  %y = graph.linear %o, %wo : (tensor<2x96x128xf16>, tensor<128x128xf16>) -> tensor<2x96x128xf16>
  func.return %y : tensor<2x96x128xf16>
}
// CHECK: graph-to-stages: a batch of 2 sequences of 96 tokens: a tile is one sequence's, so 128 rows a tile must divide T

// -----

// A batch's heads merged back with the batch and head dimensions swapped (perm [1, 0, 2, 3]).
func.func @batch_merge_perm(%x: tensor<2x128x128xf16>, %wqkv: tensor<384x128xf16>, %wo: tensor<128x128xf16>) -> tensor<2x128x128xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<2x128x128xf16>, tensor<384x128xf16>) -> tensor<2x128x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<2x128x384xf16>) -> (tensor<2x128x128xf16>, tensor<2x128x128xf16>, tensor<2x128x128xf16>)
  %q4 = graph.reshape %q : (tensor<2x128x128xf16>) -> tensor<2x128x2x64xf16>
  %qh = graph.transpose %q4 perm [0, 2, 1, 3] : (tensor<2x128x2x64xf16>) -> tensor<2x2x128x64xf16>
  %k4 = graph.reshape %k : (tensor<2x128x128xf16>) -> tensor<2x128x2x64xf16>
  %kh = graph.transpose %k4 perm [0, 2, 1, 3] : (tensor<2x128x2x64xf16>) -> tensor<2x2x128x64xf16>
  %v4 = graph.reshape %v : (tensor<2x128x128xf16>) -> tensor<2x128x2x64xf16>
  %vh = graph.transpose %v4 perm [0, 2, 1, 3] : (tensor<2x128x2x64xf16>) -> tensor<2x2x128x64xf16>
  %s = graph.linear %qh, %kh : (tensor<2x2x128x64xf16>, tensor<2x2x128x64xf16>) -> tensor<2x2x128x128xf16>
  %p = graph.softmax %s dim -1 causal : tensor<2x2x128x128xf16>
  %o = graph.matmul %p, %vh : (tensor<2x2x128x128xf16>, tensor<2x2x128x64xf16>) -> tensor<2x2x128x64xf16>
  %ot = graph.transpose %o perm [1, 0, 2, 3] : (tensor<2x2x128x64xf16>) -> tensor<2x2x128x64xf16>
  %om = graph.reshape %ot : (tensor<2x2x128x64xf16>) -> tensor<2x128x128xf16>
  %y = graph.linear %om, %wo : (tensor<2x128x128xf16>, tensor<128x128xf16>) -> tensor<2x128x128xf16>
  func.return %y : tensor<2x128x128xf16>
}
// CHECK: graph-to-stages: the heads merge back as o.transpose(-3, -2) (perm [1, 0, 2]; a batch: [0, 2, 1, 3]) reshaped to [batch x] tokens x width

// -----

// A transposed activation: only a weight, a function argument, is bound transposed.
func.func @transposed_activation(%x: tensor<16x64xf16>, %w1: tensor<64x128xf16>, %w2: tensor<64x128xf16>) -> tensor<16x64xf16> {
  %r = graph.relu %w1 : tensor<64x128xf16>
  %rt = graph.transpose %r perm [1, 0] : (tensor<64x128xf16>) -> tensor<128x64xf16>
  %h = graph.linear %x, %rt : (tensor<16x64xf16>, tensor<128x64xf16>) -> tensor<16x128xf16>
  %y = graph.linear %h, %w2 : (tensor<16x128xf16>, tensor<64x128xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph_to_stages_invalid.mlir:[[# @LINE - 5]]:3: graph-to-stages: the first weight transposes a tensor the piece computes: only a weight, a function argument, is read transposed (the GEMMs have no transposed operand)

// -----

// A weight's transpose swaps its two dimensions; perm [0, 1] leaves them.
func.func @identity_perm(%x: tensor<16x64xf16>, %w1: tensor<128x64xf16>, %w2: tensor<64x128xf16>) -> tensor<16x64xf16> {
  %w1t = graph.transpose %w1 perm [0, 1] : (tensor<128x64xf16>) -> tensor<128x64xf16>
  %h = graph.linear %x, %w1t : (tensor<16x64xf16>, tensor<128x64xf16>) -> tensor<16x128xf16>
  %y = graph.linear %h, %w2 : (tensor<16x128xf16>, tensor<64x128xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: the first weight is transposed by perm [0, 1]: a weight's transpose swaps its two dimensions (perm [1, 0])

// -----

// A transposed weight read twice: each linear reads its own transpose.
func.func @shared_transpose(%x: tensor<16x64xf16>, %w: tensor<64x64xf16>) -> tensor<16x64xf16> {
  %wt = graph.transpose %w perm [1, 0] : (tensor<64x64xf16>) -> tensor<64x64xf16>
  %h = graph.linear %x, %wt : (tensor<16x64xf16>, tensor<64x64xf16>) -> tensor<16x64xf16>
  %y = graph.linear %h, %wt : (tensor<16x64xf16>, tensor<64x64xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: graph.transpose's result is used 2 times; the pattern keeps it inside the piece

// -----

// SwiGLU's epilogue interleaves N x K gate and up weights: no transposed one.
func.func @swiglu_transposed(%x: tensor<16x64xf16>, %wg: tensor<64x128xf16>, %wu: tensor<128x64xf16>, %wd: tensor<64x128xf16>) -> tensor<16x64xf16> {
  %wgt = graph.transpose %wg perm [1, 0] : (tensor<64x128xf16>) -> tensor<128x64xf16>
  %g = graph.linear %x, %wgt : (tensor<16x64xf16>, tensor<128x64xf16>) -> tensor<16x128xf16>
  %s = graph.silu %g : tensor<16x128xf16>
  %u = graph.linear %x, %wu : (tensor<16x64xf16>, tensor<128x64xf16>) -> tensor<16x128xf16>
  %h = graph.mul %s, %u : tensor<16x128xf16>
  %y = graph.linear %h, %wd : (tensor<16x128xf16>, tensor<64x128xf16>) -> tensor<16x64xf16>
  func.return %y : tensor<16x64xf16>
}
// CHECK: graph-to-stages: the gate weight is transposed: only an MLP's or attention's projection weight is read transposed
