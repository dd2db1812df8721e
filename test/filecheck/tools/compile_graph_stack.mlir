// RUN: tilesync compile %s -t sm_90a | filecheck %s
// A graph function that is a stack of Linear layers compiles by itself too: graph-to-dataflow
// (fuse_light) makes its Kitsune pipeline, one persistent kernel whose CTAs take the stages'
// roles and pass tiles through queues (graph-to-stages refused it: "a piece returns exactly
// one tensor").
func.func @stack(%x: tensor<1024x64xf16>, %w0: tensor<256x64xf16>, %b0: tensor<256xf16>, %w1: tensor<256x256xf16>, %b1: tensor<256xf16>, %w2: tensor<64x256xf16>, %b2: tensor<64xf16>) -> tensor<1024x64xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<1024x64xf16>, tensor<256x64xf16>, tensor<256xf16>) -> tensor<1024x256xf16>
  %h0 = graph.relu %l0 : tensor<1024x256xf16>
  %l1 = graph.linear %h0, %w1, %b1 : (tensor<1024x256xf16>, tensor<256x256xf16>, tensor<256xf16>) -> tensor<1024x256xf16>
  %h1 = graph.relu %l1 : tensor<1024x256xf16>
  %y = graph.linear %h1, %w2, %b2 : (tensor<1024x256xf16>, tensor<64x256xf16>, tensor<64xf16>) -> tensor<1024x64xf16>
  func.return %y : tensor<1024x64xf16>
}

// CHECK: .entry mlp_persistent(
// CHECK: ld.acquire.gpu
