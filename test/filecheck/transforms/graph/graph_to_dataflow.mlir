// RUN: tilesync-opt %s -p 'graph-to-dataflow{fused=4}' | filecheck %s
// RUN: tilesync-opt %s -p graph-to-dataflow | filecheck %s --check-prefix=UNFUSED
// RUN: tilesync-opt %s -p 'graph-to-dataflow{fuse_light=true}' | filecheck %s
// RUN: not tilesync-opt %s -p 'graph-to-dataflow{fused=4 fuse_light=true}' 2>&1 | filecheck %s --check-prefix=BOTH
// BOTH: tilesync-opt: error: graph-to-dataflow: options 'fused' and 'fuse_light' each choose the fused layers: give one
// RUN: tilesync-opt %s -p 'graph-to-dataflow{fuse_light=true allot=model}' | filecheck %s --check-prefix=MODEL
// RUN: not tilesync-opt %s -p 'graph-to-dataflow{allot=measured}' 2>&1 | filecheck %s --check-prefix=ALLOT
// ALLOT: tilesync-opt: error: graph-to-dataflow: option 'allot' is one of even, model, got 'measured'

// `allot=model`: the ILP's CTAs from each layer's modelled time (its rows' bytes in and out):
// the skip's 320 columns in and the dot head's second read of its input weigh most, the first
// layer (64 in) least; even, each stage would have 33. A launch moves 16 tiles a stage (1024
// rows of 64), so no stage gets more than 16 CTAs (the heaviest, @layer2, gets them all; the
// model once gave it 45, 29 with no tile), and the others as many as keep up with it.
// MODEL: dataflow.stage @layer0 {{{.*}}ctas = 7 : i64
// MODEL: dataflow.stage @layer1 {{{.*}}ctas = 12 : i64
// MODEL: dataflow.stage @layer2 {{{.*}}ctas = 16 : i64
// MODEL: dataflow.stage @layers3_4 {{{.*}}ctas = 13 : i64
// RUN: tilesync-opt %s -p 'graph-to-dataflow{fused=4},convert-dataflow-to-nvvm{debug=false},dataflow-persistent-kernel' | filecheck %s --check-prefix=FUSED-KERNEL

// NeRF's MLP in small as the graph level writes it: a layer, the input concatenated again
// (the skip), the density as a one-output linear on the trunk's output (the dot head) beside
// the plain feature layer, the directions %v concatenated before the feature, a ReLU layer of
// 128 and a plain 16-wide output. The walk reads it as MlpStack(widths 64, 256, 256, 256, 128,
// 16; skip at 1; side input at 3; plain 2 and 4; dot head at 2); `fused=4` computes the last
// layer in the stage of the one before it. `fuse_light` chooses the same: the last layer
// (128 x 16 weights) and the first (64 x 256) are light against the skip's 320 x 256, but the
// second reads the skip and stays a stage of its own.
func.func @nerf(%x: tensor<1024x64xf16>, %v: tensor<1024x64xf16>, %w0: tensor<256x64xf16>, %b0: tensor<256xf16>, %w1: tensor<256x320xf16>, %b1: tensor<256xf16>, %ws: tensor<1x256xf16>, %bs: tensor<1xf16>, %wf: tensor<256x256xf16>, %bf: tensor<256xf16>, %w3: tensor<128x320xf16>, %b3: tensor<128xf16>, %w4: tensor<16x128xf16>, %b4: tensor<16xf16>) -> (tensor<1024x16xf16>, tensor<1024x1xf16>) {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<1024x64xf16>, tensor<256x64xf16>, tensor<256xf16>) -> tensor<1024x256xf16>
  %h1 = graph.relu %l0 : tensor<1024x256xf16>
  %c1 = graph.concat %x, %h1 dim -1 : (tensor<1024x64xf16>, tensor<1024x256xf16>) -> tensor<1024x320xf16>
  %l1 = graph.linear %c1, %w1, %b1 : (tensor<1024x320xf16>, tensor<256x320xf16>, tensor<256xf16>) -> tensor<1024x256xf16>
  %h2 = graph.relu %l1 : tensor<1024x256xf16>
  %s = graph.linear %h2, %ws, %bs : (tensor<1024x256xf16>, tensor<1x256xf16>, tensor<1xf16>) -> tensor<1024x1xf16>
  %f = graph.linear %h2, %wf, %bf : (tensor<1024x256xf16>, tensor<256x256xf16>, tensor<256xf16>) -> tensor<1024x256xf16>
  %c3 = graph.concat %v, %f dim -1 : (tensor<1024x64xf16>, tensor<1024x256xf16>) -> tensor<1024x320xf16>
  %l3 = graph.linear %c3, %w3, %b3 : (tensor<1024x320xf16>, tensor<128x320xf16>, tensor<128xf16>) -> tensor<1024x128xf16>
  %h4 = graph.relu %l3 : tensor<1024x128xf16>
  %y = graph.linear %h4, %w4, %b4 : (tensor<1024x128xf16>, tensor<16x128xf16>, tensor<16xf16>) -> tensor<1024x16xf16>
  func.return %y, %s : tensor<1024x16xf16>, tensor<1024x1xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = (tensor<1024x64xf16>, tensor<1024x64xf16>, {{.*}}) -> (tensor<1024x16xf16>, tensor<1024x1xf16>)} {
// CHECK-NOT:  func.func
// CHECK:      gpu.func @layer0(%q_out: !dataflow.queue<132 x memref<64x256xf16>>, %X: memref<1024x64xf16>, %W: memref<256x64xf16>, %bias: memref<256xf16>) kernel
// CHECK:      gpu.func @layer1(%q_in: !dataflow.queue<132 x memref<64x256xf16>>, %q_out: !dataflow.queue<132 x memref<64x256xf16>>, %X: memref<1024x64xf16>, %W: memref<256x320xf16>, %bias: memref<256xf16>) kernel
// CHECK:      gpu.func @layer2(%q_in: !dataflow.queue<132 x memref<64x256xf16>>, %q_out: !dataflow.queue<132 x memref<64x256xf16>>, %W: memref<256x256xf16>, %bias: memref<256xf16>, %w_dot: memref<256xf16>, %b_dot: memref<1xf16>, %S: memref<1024xf16>) kernel
// CHECK:      gpu.func @layers3_4(%q_in: !dataflow.queue<132 x memref<64x256xf16>>, %V0: memref<1024x64xf16>, %W3: memref<128x320xf16>, %bias3: memref<128xf16>, %W4: memref<16x128xf16>, %bias4: memref<16xf16>, %Y: memref<1024x16xf16>) kernel
// CHECK:      dataflow.pipeline @mlp {
// CHECK-NEXT:   dataflow.queue @h1 pin_l2
// CHECK-NEXT:   dataflow.queue @h2 pin_l2
// CHECK-NEXT:   dataflow.queue @h3 pin_l2
// Each kernel argument, queues aside, as the function's argument or result it is: X is %x,
// the weights and biases are theirs, S is result 1 and Y result 0.
// CHECK-NEXT:   dataflow.stage @layer0 {{{.*}}graph.bind = [#graph.bind<input 0>, #graph.bind<input 2>, #graph.bind<input 3>]{{.*}}outputs = [@h1]}
// CHECK-NEXT:   dataflow.stage @layer1 {{{.*}}graph.bind = [#graph.bind<input 0>, #graph.bind<input 4>, #graph.bind<input 5>]{{.*}}inputs = [@h1], outputs = [@h2]}
// CHECK-NEXT:   dataflow.stage @layer2 {{{.*}}graph.bind = [#graph.bind<input 8>, #graph.bind<input 9>, #graph.bind<input 6>, #graph.bind<input 7>, #graph.bind<result 1>]{{.*}}inputs = [@h2], outputs = [@h3]}
// CHECK-NEXT:   dataflow.stage @layers3_4 {{{.*}}graph.bind = [#graph.bind<input 1>, #graph.bind<input 10>, #graph.bind<input 11>, #graph.bind<input 12>, #graph.bind<input 13>, #graph.bind<result 0>]{{.*}}inputs = [@h3], outputs = []}
// CHECK-NEXT: }

// UNFUSED: dataflow.stage @layer3 {{{.*}}graph.bind = [#graph.bind<input 1>, #graph.bind<input 10>, #graph.bind<input 11>]{{.*}}inputs = [@h3], outputs = [@h4]}
// UNFUSED-NEXT: dataflow.stage @layer4 {{{.*}}graph.bind = [#graph.bind<input 12>, #graph.bind<input 13>, #graph.bind<result 0>]{{.*}}inputs = [@h4], outputs = []}

// The queues lowered and the stages as one cooperative kernel, as the runtime launches them.
// FUSED-KERNEL: gpu.func @mlp_persistent(
