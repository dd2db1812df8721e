// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify{limit=8}' | filecheck %s --check-prefix=SYNC

// GPT-2's MLP (768 -> 3072 -> 768, biases, tanh GeLU) on 2 x 64 tokens: two wgmma GEMMs, GeLU
// and the biases fused into their epilogues, the hidden layer a temporary of 128 x 3072.
func.func @gpt_mlp(%x: tensor<2x64x768xf16>, %w1: tensor<3072x768xf16>, %b1: tensor<3072xf16>, %w2: tensor<768x3072xf16>, %b2: tensor<768xf16>) -> tensor<2x64x768xf16> {
  %h = graph.linear %x, %w1, %b1 : (tensor<2x64x768xf16>, tensor<3072x768xf16>, tensor<3072xf16>) -> tensor<2x64x3072xf16>
  %a = graph.gelu %h approximate "tanh" : tensor<2x64x3072xf16>
  %y = graph.linear %a, %w2, %b2 : (tensor<2x64x3072xf16>, tensor<768x3072xf16>, tensor<768xf16>) -> tensor<2x64x768xf16>
  func.return %y : tensor<2x64x768xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = (tensor<2x64x768xf16>, tensor<3072x768xf16>, tensor<3072xf16>, tensor<768x3072xf16>, tensor<768xf16>) -> tensor<2x64x768xf16>, graph.temps = [tensor<128x3072xf16>]} {
// CHECK-NOT:  func.func
// CHECK:      gpu.module @gemm1_module
// CHECK:      gpu.func @gemm1(%A: memref<128x768xf16>, %B: memref<3072x768xf16>, %C: memref<128x3072xf16>, %bias: memref<3072xf16>) kernel
// The epilogue: bias, then GeLU's tanh.
// CHECK:      math.tanh
// CHECK:      sync.store_point
// CHECK:      gpu.module @gemm2_module
// CHECK:      gpu.func @gemm2(%A: memref<128x3072xf16>, %B: memref<768x3072xf16>, %C: memref<128x768xf16>, %bias: memref<768xf16>) kernel
// CHECK:      sync.load_point operand 0
// CHECK:      sync.stage @gemm1 {graph.bind = [#graph.bind<input 0>, #graph.bind<input 1>, #graph.bind<temp 0>, #graph.bind<input 2>], kernel = @gemm1_module::@gemm1, grid = array<i64: 1, 12>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 256, 64>}
// CHECK-NEXT: sync.stage @gemm2 {graph.bind = [#graph.bind<temp 0>, #graph.bind<input 3>, #graph.bind<result 0>, #graph.bind<input 4>], kernel = @gemm2_module::@gemm2, grid = array<i64: 1, 6>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 64>}
// A GEMM1 tile writes 256 columns of H, four of GEMM2's 64-wide k-steps.
// CHECK-NEXT: sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0 floordiv 4) forall s0 in [0, 48)
// CHECK-NEXT: sync.launch @gemm1 {priority = -1 : i64}
// CHECK-NEXT: sync.launch @gemm2 {stream = 1 : i64}

// The cuSync passes take the program as it is: RowSync generated, PDL, verified.
// SYNC:      sync.stage @gemm1 {{.*}}policy = #sync.policy<RowSync
// SYNC:      sync.stage @gemm2 {{.*}}sync.progress = "@gemm1: programmatic dependent launch", sync.verified = "proved"
// SYNC:      sync.launch @gemm2 {pdl = true}
