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
// CHECK: graph-to-stages: the generated GEMMs take f16 or bf16, not f32

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
