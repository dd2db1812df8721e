// RUN: tilesync-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Each case is one mistake a verifier must name.

func.func @f(%x: tensor<8x64xf16>, %w: tensor<128x32xf16>) -> tensor<8x128xf16> {
  %y = graph.linear %x, %w : (tensor<8x64xf16>, tensor<128x32xf16>) -> tensor<8x128xf16>
  func.return %y : tensor<8x128xf16>
}
// CHECK: graph.linear: input's last dimension 64 must equal the weight's K = 32

// -----

func.func @f(%x: tensor<8x64xf16>, %w: tensor<128x64xf16>) -> tensor<8x64xf16> {
  %y = graph.linear %x, %w : (tensor<8x64xf16>, tensor<128x64xf16>) -> tensor<8x64xf16>
  func.return %y : tensor<8x64xf16>
}
// CHECK: graph.linear: result shape [8, 64] does not match the expected [8, 128]

// -----

func.func @f(%x: tensor<8x64xf16>, %w: tensor<128x64xf16>, %b: tensor<64xf16>) -> tensor<8x128xf16> {
  %y = graph.linear %x, %w, %b : (tensor<8x64xf16>, tensor<128x64xf16>, tensor<64xf16>) -> tensor<8x128xf16>
  func.return %y : tensor<8x128xf16>
}
// CHECK: graph.linear: bias must have N = 128 elements, got [64]

// -----

func.func @f(%x: tensor<8x64xf16>, %w: tensor<128x64xbf16>) -> tensor<8x128xf16> {
  %y = graph.linear %x, %w : (tensor<8x64xf16>, tensor<128x64xbf16>) -> tensor<8x128xf16>
  func.return %y : tensor<8x128xf16>
}
// CHECK: graph.linear: operands and result must share one element type, got bf16, f16

// -----

func.func @f(%x: tensor<8x64xi8>, %w: tensor<128x64xi8>) -> tensor<8x128xi8> {
  %y = graph.linear %x, %w : (tensor<8x64xi8>, tensor<128x64xi8>) -> tensor<8x128xi8>
  func.return %y : tensor<8x128xi8>
}
// CHECK: graph.linear: input has element type i8; the graph level takes f16, bf16 or f32

// -----

func.func @f(%x: tensor<?x64xf16>, %w: tensor<128x64xf16>) -> tensor<?x128xf16> {
  %y = graph.linear %x, %w : (tensor<?x64xf16>, tensor<128x64xf16>) -> tensor<?x128xf16>
  func.return %y : tensor<?x128xf16>
}
// CHECK: graph.linear: input must be a tensor of static shape, got tensor<?x64xf16>

// -----

func.func @f(%a: tensor<8x64xf16>, %b: tensor<32x16xf16>) -> tensor<8x16xf16> {
  %y = graph.matmul %a, %b : (tensor<8x64xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>
  func.return %y : tensor<8x16xf16>
}
// CHECK: graph.matmul: contracted dimensions differ: 64 and 32

// -----

func.func @f(%x: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %y = graph.gelu %x approximate "sigmoid" : tensor<8x64xf16>
  func.return %y : tensor<8x64xf16>
}
// CHECK: graph.gelu: approximate must be one of ('none', 'tanh'), got 'sigmoid'

// -----

func.func @f(%x: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %y = graph.softmax %x dim 2 : tensor<8x64xf16>
  func.return %y : tensor<8x64xf16>
}
// CHECK: graph.softmax: dimension 2 out of range for rank 2

// -----

func.func @f(%x: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %y = graph.softmax %x dim -1 scale -0.125 : tensor<8x64xf16>
  func.return %y : tensor<8x64xf16>
}
// CHECK: graph.softmax: scale must be positive and finite, got -0.125

// -----

func.func @f(%x: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %y = graph.softmax %x dim -1 scale 0.0 : tensor<8x64xf16>
  func.return %y : tensor<8x64xf16>
}
// CHECK: graph.softmax: scale must be positive and finite, got 0.0

// -----

func.func @f(%x: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %y = graph.softmax %x dim 0 causal : tensor<8x64xf16>
  func.return %y : tensor<8x64xf16>
}
// CHECK: graph.softmax: a causal mask runs over queries x keys: the softmax's dimension is the last of at least two

// -----

func.func @f(%x: tensor<64xf16>) -> tensor<64xf16> {
  %y = graph.softmax %x dim -1 causal : tensor<64xf16>
  func.return %y : tensor<64xf16>
}
// CHECK: graph.softmax: a causal mask runs over queries x keys: the softmax's dimension is the last of at least two

// -----

func.func @f(%x: tensor<1x64x8x8xf16>, %w: tensor<64x32x3x3xf16>) -> tensor<1x64x8x8xf16> {
  %y = graph.conv2d %x, %w stride [1, 1] padding [1, 1] : (tensor<1x64x8x8xf16>, tensor<64x32x3x3xf16>) -> tensor<1x64x8x8xf16>
  func.return %y : tensor<1x64x8x8xf16>
}
// CHECK: graph.conv2d: input has 64 channels, weight 32

// -----

func.func @f(%x: tensor<1x64x8x8xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<1x64x8x8xf16> {
  %y = graph.conv2d %x, %w stride [2, 2] padding [1, 1] : (tensor<1x64x8x8xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x8x8xf16>
  func.return %y : tensor<1x64x8x8xf16>
}
// CHECK: graph.conv2d: result shape [1, 64, 8, 8] does not match the expected [1, 64, 4, 4]

// -----

// NHWC: channels are the last dimension of x and of the (K x R x S x C) filter.
func.func @f(%x: tensor<1x8x8x64xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<1x8x8x64xf16> {
  %y = graph.conv2d %x, %w stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<64x64x3x3xf16>) -> tensor<1x8x8x64xf16>
  func.return %y : tensor<1x8x8x64xf16>
}
// CHECK: graph.conv2d: input has 64 channels, weight 3

// -----

func.func @f(%x: tensor<1x8x8x64xf16>, %w: tensor<64x3x3x64xf16>) -> tensor<1x64x8x8xf16> {
  %y = graph.conv2d %x, %w stride [1, 1] padding [1, 1] layout "NHWC" : (tensor<1x8x8x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x64x8x8xf16>
  func.return %y : tensor<1x64x8x8xf16>
}
// CHECK: graph.conv2d: result shape [1, 64, 8, 8] does not match the expected [1, 8, 8, 64]

// -----

func.func @f(%x: tensor<1x8x8x64xf16>, %w: tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16> {
  %y = graph.conv2d %x, %w stride [1, 1] padding [1, 1] layout "HWCN" : (tensor<1x8x8x64xf16>, tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf16>
  func.return %y : tensor<1x8x8x64xf16>
}
// CHECK: graph.conv2d: layout must be one of ('NCHW', 'NHWC'), got 'HWCN'

// -----

func.func @f(%x: tensor<4x8xf16>) -> tensor<4xf16> {
  %y = graph.reduce_sum %x dims [1, 1] : (tensor<4x8xf16>) -> tensor<4xf16>
  func.return %y : tensor<4xf16>
}
// CHECK: graph.reduce_sum: dims must be distinct and not empty

// -----

func.func @f(%a: tensor<4x8xf16>, %b: tensor<5x8xf16>) -> tensor<4x16xf16> {
  %y = graph.concat %a, %b dim 1 : (tensor<4x8xf16>, tensor<5x8xf16>) -> tensor<4x16xf16>
  func.return %y : tensor<4x16xf16>
}
// CHECK: graph.concat: input 1 of shape [5, 8] differs from input 0 outside dimension 1

// -----

func.func @f(%x: tensor<4x24xf16>) -> tensor<4x8xf16> {
  %a, %b = graph.split %x dim 1 : (tensor<4x24xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>)
  func.return %a : tensor<4x8xf16>
}
// CHECK: graph.split: the results' sizes along dimension 1 sum to 16, not the input's 24

// -----

func.func @f(%x: tensor<4x16xf16>) -> tensor<2x8xf16> {
  %a, %b = graph.split %x dim -1 : (tensor<4x16xf16>) -> (tensor<2x8xf16>, tensor<4x8xf16>)
  func.return %a : tensor<2x8xf16>
}
// CHECK: graph.split: result 0 of shape [2, 8] differs from the input [4, 16] outside dimension 1

// -----

func.func private @f() attributes {bind = #graph.bind<gate_up 1>}
// CHECK: #graph.bind<gate_up> takes 2 index(es) (>= 0), got [1]

// -----

func.func private @f() attributes {bind = #graph.bind<transposed 1, 3>}
// CHECK: #graph.bind<transposed> takes 1 index(es) (>= 0), got [1, 3]

// -----

func.func private @f() attributes {bind = #graph.bind<weight 1>}
// CHECK: #graph.bind: kind must be one of ('input', 'temp', 'result', 'gate_up', 'transposed'), got 'weight'

// -----

func.func private @f() attributes {bind = #graph.bind<input 0 as f16>}
// CHECK: #graph.bind: the type after 'as' must be a !tile.tensor_map, got f16

// -----

func.func private @f() attributes {bind = #graph.bind<input 1 over [128, 3, 192]>}
// CHECK: #graph.bind: 'over' takes a matrix's two sizes (>= 1), got [128, 3, 192]

// -----

func.func private @f() attributes {bind = #graph.bind<input 0 over [512, 64] as !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>>}
// CHECK: #graph.bind: an im2col map is encoded over the tensor its type names, not an 'over' matrix

// -----

func.func @f(%x: tensor<8x128xf16>, %g: tensor<64xf16>, %b: tensor<128xf16>) -> tensor<8x128xf16> {
  %y = graph.layer_norm %x, %g, %b eps 1.0e-05 : (tensor<8x128xf16>, tensor<64xf16>, tensor<128xf16>) -> tensor<8x128xf16>
  func.return %y : tensor<8x128xf16>
}
// CHECK: graph.layer_norm: weight must have N = 128 elements (the input's last dimension), got [64]

// -----

func.func @f(%x: tensor<8x128xf16>, %g: tensor<128xf16>, %b: tensor<128xf16>) -> tensor<8x128xf16> {
  %y = graph.layer_norm %x, %g, %b eps 0.0 : (tensor<8x128xf16>, tensor<128xf16>, tensor<128xf16>) -> tensor<8x128xf16>
  func.return %y : tensor<8x128xf16>
}
// CHECK: graph.layer_norm: eps must be positive and finite, got 0.0

// -----

func.func @f(%x: tensor<8x128xf16>, %g: tensor<128xf16>, %b: tensor<128xf32>) -> tensor<8x128xf16> {
  %y = graph.layer_norm %x, %g, %b eps 1.0e-05 : (tensor<8x128xf16>, tensor<128xf16>, tensor<128xf32>) -> tensor<8x128xf16>
  func.return %y : tensor<8x128xf16>
}
// CHECK: graph.layer_norm: operands and result must share one element type, got f16, f32

// -----

func.func @f(%x: tensor<4x64x32xf16>, %w: tensor<2x64x32xf16>) -> tensor<4x64x64xf16> {
  %y = graph.linear %x, %w : (tensor<4x64x32xf16>, tensor<2x64x32xf16>) -> tensor<4x64x64xf16>
  func.return %y : tensor<4x64x64xf16>
}
// CHECK: graph.linear: input must be ... x K and weight N x K (or the input's batch dimensions x N x K), got [4, 64, 32] and [2, 64, 32]

// -----

func.func @f(%a: tensor<4x64x64xf16>, %b: tensor<3x64x32xf16>) -> tensor<4x64x32xf16> {
  %y = graph.matmul %a, %b : (tensor<4x64x64xf16>, tensor<3x64x32xf16>) -> tensor<4x64x32xf16>
  func.return %y : tensor<4x64x32xf16>
}
// CHECK: graph.matmul: lhs must be ... x M x K and rhs K x N (or the lhs's batch dimensions x K x N), got [4, 64, 64] and [3, 64, 32]

// -----

func.func @f(%x: tensor<64x256xf16>) -> tensor<64x4x32xf16> {
  %y = graph.reshape %x : (tensor<64x256xf16>) -> tensor<64x4x32xf16>
  func.return %y : tensor<64x4x32xf16>
}
// CHECK: graph.reshape: [64, 256] has 16384 elements, the result [64, 4, 32] 8192

// -----

func.func @f(%x: tensor<64x4x32xf16>) -> tensor<4x64x32xf16> {
  %y = graph.transpose %x perm [1, 1, 2] : (tensor<64x4x32xf16>) -> tensor<4x64x32xf16>
  func.return %y : tensor<4x64x32xf16>
}
// CHECK: graph.transpose: perm [1, 1, 2] is not a permutation of the input's 3 dimensions

// -----

func.func @f(%x: tensor<64x4x32xf16>) -> tensor<64x4x32xf16> {
  %y = graph.transpose %x perm [1, 0, 2] : (tensor<64x4x32xf16>) -> tensor<64x4x32xf16>
  func.return %y : tensor<64x4x32xf16>
}
// CHECK: graph.transpose: result shape [64, 4, 32] does not match the expected [4, 64, 32]
