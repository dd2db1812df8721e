// RUN: tilesync-opt %s -p 'graph-to-dataflow{fuse_light=true}' | filecheck %s

// MeshGraphNets' edge MLP at the graph level: the edge's and its two nodes' 128-wide latents
// (384 columns) through Linear+ReLU, Linear+ReLU, a plain Linear and a LayerNorm. The layer
// norm becomes MlpStack's SIMT stage of its own, reading the last layer's tiles from one more
// queue and taking its weight and bias (arguments 7 and 8) before the result; `fuse_light`
// computes the light last layer in the stage before it, as the bench runs it. Its layers are
// 128 wide, so a CTA takes four 64-row tiles at once, one per warpgroup (most_queue_groups).
func.func @edge_mlp(%x: tensor<1024x384xf16>, %w0: tensor<128x384xf16>, %b0: tensor<128xf16>, %w1: tensor<128x128xf16>, %b1: tensor<128xf16>, %w2: tensor<128x128xf16>, %b2: tensor<128xf16>, %g: tensor<128xf16>, %beta: tensor<128xf16>) -> tensor<1024x128xf16> {
  %l0 = graph.linear %x, %w0, %b0 : (tensor<1024x384xf16>, tensor<128x384xf16>, tensor<128xf16>) -> tensor<1024x128xf16>
  %h1 = graph.relu %l0 : tensor<1024x128xf16>
  %l1 = graph.linear %h1, %w1, %b1 : (tensor<1024x128xf16>, tensor<128x128xf16>, tensor<128xf16>) -> tensor<1024x128xf16>
  %h2 = graph.relu %l1 : tensor<1024x128xf16>
  %l2 = graph.linear %h2, %w2, %b2 : (tensor<1024x128xf16>, tensor<128x128xf16>, tensor<128xf16>) -> tensor<1024x128xf16>
  %y = graph.layer_norm %l2, %g, %beta eps 1.0e-05 : (tensor<1024x128xf16>, tensor<128xf16>, tensor<128xf16>) -> tensor<1024x128xf16>
  func.return %y : tensor<1024x128xf16>
}

// CHECK:     gpu.func @layer0({{.*}}) kernel attributes {gpu.known_block_size = array<i32: 512, 1, 1>}
// CHECK:     gpu.func @layer_norm(%q_in: !dataflow.queue<{{.*}} x memref<64x128xf16>>, %gamma: memref<128xf16>, %beta: memref<128xf16>, %Y: memref<1024x128xf16>)
// CHECK:       dataflow.acquire_full %q_in
// CHECK:       dataflow.release_empty %q_in
// CHECK:     dataflow.pipeline @mlp {
// CHECK-NEXT:  dataflow.queue @h1
// CHECK-NEXT:  dataflow.queue @h2
// CHECK-NEXT:  dataflow.stage @layer0 {{{.*}}graph.bind = [#graph.bind<input 0>, #graph.bind<input 1>, #graph.bind<input 2>]{{.*}}outputs = [@h1]}
// CHECK-NEXT:  dataflow.stage @layers1_2 {{{.*}}graph.bind = [#graph.bind<input 3>, #graph.bind<input 4>, #graph.bind<input 5>, #graph.bind<input 6>]{{.*}}inputs = [@h1], outputs = [@h2]}
// CHECK-NEXT:  dataflow.stage @layer_norm {{{.*}}graph.bind = [#graph.bind<input 7>, #graph.bind<input 8>, #graph.bind<result 0>]{{.*}}resource = #dataflow.resource<simt>{{.*}}inputs = [@h2], outputs = []}
