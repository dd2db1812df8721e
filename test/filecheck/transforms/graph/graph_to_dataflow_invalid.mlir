// RUN: tilesync-opt %s -p graph-to-dataflow --split-input-file --verify-diagnostics | filecheck %s

// Functions graph-to-dataflow refuses, each at the op concerned and saying why.

// cat([h, v]): the kernel reads the concatenated input's columns first.
func.func @after(%x: tensor<128x64xf16>, %v: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %w1: tensor<64x128xf16>, %b1: tensor<64xf16>) -> tensor<128x64xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %c = graph.concat %l0, %v dim -1 : (tensor<128x64xf16>, tensor<128x64xf16>) -> tensor<128x128xf16>
  %y = graph.linear %c, %w1, %b1 : (tensor<128x128xf16>, tensor<64x128xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  func.return %y : tensor<128x64xf16>
}
// CHECK: graph-to-dataflow: a stack concatenates one function argument before h, along the columns: concat(%a, h dim -1)

// -----

func.func @no_bias(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %w1: tensor<64x64xf16>, %b1: tensor<64xf16>) -> tensor<128x64xf16> {
  %l0 = graph.linear %x, %w0 : (tensor<128x64xf16>, tensor<64x64xf16>) -> tensor<128x64xf16>
  %y = graph.linear %l0, %w1, %b1 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  func.return %y : tensor<128x64xf16>
}
// CHECK: graph-to-dataflow: layer 0's linear has no bias: the stage kernels add one

// -----

func.func @fp32(%x: tensor<128x64xf32>, %w0: tensor<64x64xf32>, %b0: tensor<64xf32>, %w1: tensor<64x64xf32>, %b1: tensor<64xf32>) -> tensor<128x64xf32> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<128x64xf32>
  %y = graph.linear %l0, %w1, %b1 : (tensor<128x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<128x64xf32>
  func.return %y : tensor<128x64xf32>
}
// CHECK: graph-to-dataflow: the stack's kernels take f16 tensors, got tensor<128x64xf32>

// -----

// Two layers read the first layer's output: a branch, not a stack.
func.func @branch(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %w1: tensor<64x64xf16>, %b1: tensor<64xf16>, %w2: tensor<64x64xf16>, %b2: tensor<64xf16>) -> tensor<128x64xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %a = graph.linear %l0, %w1, %b1 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %b = graph.linear %l0, %w2, %b2 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %y = graph.add %a, %b : tensor<128x64xf16>
  func.return %y : tensor<128x64xf16>
}
// CHECK: graph-to-dataflow: layer 1's input is read by 2 ops: a stack's layer reads only the one before it

// -----

func.func @gelu(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %w1: tensor<64x64xf16>, %b1: tensor<64xf16>) -> tensor<128x64xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %g = graph.gelu %l0 approximate "tanh" : tensor<128x64xf16>
  %y = graph.linear %g, %w1, %b1 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  func.return %y : tensor<128x64xf16>
}
// CHECK: graph-to-dataflow: layer 1 must be a graph.linear, found graph.gelu

// -----

// A 12-wide layer: MlpStack's own check, at the function.
func.func @narrow(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %w1: tensor<12x64xf16>, %b1: tensor<12xf16>) -> tensor<128x12xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %h = graph.relu %l0 : tensor<128x64xf16>
  %y = graph.linear %h, %w1, %b1 : (tensor<128x64xf16>, tensor<12x64xf16>, tensor<12xf16>) -> tensor<128x12xf16>
  func.return %y : tensor<128x12xf16>
}
// CHECK: graph-to-dataflow: a layer's width is one wgmma tile of 16-column warp tiles: a multiple of 16 up to 256, got (64, 12)

// -----

// A layer's output returned: the stack ends there, and the layer after it is left over.
func.func @two(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %w1: tensor<64x64xf16>, %b1: tensor<64xf16>) -> (tensor<128x64xf16>, tensor<128x64xf16>) {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %y = graph.linear %l0, %w1, %b1 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  func.return %y, %l0 : tensor<128x64xf16>, tensor<128x64xf16>
}
// CHECK: graph-to-dataflow: graph.linear is not part of the stack (its layers, concatenations, ReLUs, dot head and layer norm)

// -----

func.func @weight_computed(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %b1: tensor<64xf16>) -> tensor<128x64xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %w1 = graph.relu %w0 : tensor<64x64xf16>
  %y = graph.linear %l0, %w1, %b1 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  func.return %y : tensor<128x64xf16>
}
// CHECK: graph-to-dataflow: layer 1's weight must be an argument of @weight_computed

// -----

// A one-output linear with no layer beside it is the stack's last layer, 1 wide.
func.func @one_wide(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %w1: tensor<1x64xf16>, %b1: tensor<1xf16>) -> tensor<128x1xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %h = graph.relu %l0 : tensor<128x64xf16>
  %y = graph.linear %h, %w1, %b1 : (tensor<128x64xf16>, tensor<1x64xf16>, tensor<1xf16>) -> tensor<128x1xf16>
  func.return %y : tensor<128x1xf16>
}
// CHECK: graph-to-dataflow: a layer's width is one wgmma tile of 16-column warp tiles: a multiple of 16 up to 256, got (64, 1)

// -----

// A layer norm is the stack's last op: one between layers is refused there.
func.func @norm_inside(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %g: tensor<64xf16>, %be: tensor<64xf16>, %w1: tensor<64x64xf16>, %b1: tensor<64xf16>) -> tensor<128x64xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %n = graph.layer_norm %l0, %g, %be eps 1.0e-05 : (tensor<128x64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %y = graph.linear %n, %w1, %b1 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  func.return %y : tensor<128x64xf16>
}
// CHECK: graph-to-dataflow: a stack's layer norm normalizes the last layer's output, read by nothing else, into its result

// -----

// Its weight and bias are the function's arguments, as every layer's.
func.func @norm_weight_computed(%x: tensor<128x64xf16>, %w0: tensor<64x64xf16>, %b0: tensor<64xf16>, %w1: tensor<64x64xf16>, %b1: tensor<64xf16>, %g: tensor<64xf16>, %be: tensor<64xf16>) -> tensor<128x64xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %h = graph.relu %l0 : tensor<128x64xf16>
  %l1 = graph.linear %h, %w1, %b1 : (tensor<128x64xf16>, tensor<64x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  %g2 = graph.add %g, %g : tensor<64xf16>
  %y = graph.layer_norm %l1, %g2, %be eps 1.0e-05 : (tensor<128x64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
  func.return %y : tensor<128x64xf16>
}
// CHECK: graph-to-dataflow: the layer norm's weight must be an argument of @norm_weight_computed

// -----

// A function with no layer at all.
func.func @empty(%x: tensor<16x64xf16>) -> tensor<16x64xf16> {
  func.return %x : tensor<16x64xf16>
}
// CHECK: graph_to_dataflow_invalid.mlir:[[# @LINE - 2]]:3: graph-to-dataflow: a stack has at least one graph.linear layer; this function returns its input
