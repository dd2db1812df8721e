// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// GPT-2's MLP (768 -> 3072 -> 768, biases, tanh GeLU) on 2 x 64 tokens: from 128 rows the
// warp-specialized TMA GEMMs (TMA loads, a TMA-store epilogue), GeLU and the biases fused into
// their epilogues, the hidden layer a temporary of 128 x 3072. (Fewer rows: the wgmma GEMMs,
// graph_to_stages_swiglu.mlir.)
func.func @gpt_mlp(%x: tensor<2x64x768xf16>, %w1: tensor<3072x768xf16>, %b1: tensor<3072xf16>, %w2: tensor<768x3072xf16>, %b2: tensor<768xf16>) -> tensor<2x64x768xf16> {
  %h = graph.linear %x, %w1, %b1 : (tensor<2x64x768xf16>, tensor<3072x768xf16>, tensor<3072xf16>) -> tensor<2x64x3072xf16>
  %a = graph.gelu %h approximate "tanh" : tensor<2x64x3072xf16>
  %y = graph.linear %a, %w2, %b2 : (tensor<2x64x3072xf16>, tensor<768x3072xf16>, tensor<768xf16>) -> tensor<2x64x768xf16>
  func.return %y : tensor<2x64x768xf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = (tensor<2x64x768xf16>, tensor<3072x768xf16>, tensor<3072xf16>, tensor<768x3072xf16>, tensor<768xf16>) -> tensor<2x64x768xf16>, graph.temps = [tensor<128x3072xf16>]} {
// CHECK-NOT:  func.func
// CHECK:      gpu.module @gemm1_module
// CHECK:      gpu.func @gemm1(%A: !tile.tensor_map<64x64xf16, swizzle 128>, %B: !tile.tensor_map<64x64xf16, swizzle 128>, %C: !tile.tensor_map<64x64xf16, swizzle 128>, %bias: memref<3072xf16>) kernel
// The epilogue: bias, then GeLU's tanh; H leaves by TMA stores, and the post waits for them.
// CHECK:      math.tanh
// CHECK:      tile.tma_store
// CHECK:      sync.store_point [{{.*}}] threads 128 async_proxy
// CHECK:      gpu.module @gemm2_module
// CHECK:      gpu.func @gemm2(%A: !tile.tensor_map<64x64xf16, swizzle 128>, %B: !tile.tensor_map<64x64xf16, swizzle 128>, %C: !tile.tensor_map<64x64xf16, swizzle 128>, %bias: memref<768xf16>) kernel
// CHECK:      sync.load_point operand 0 [{{.*}}] step {{.*}} single_thread async_proxy
// The tiles are the wave model's first proposals (kernels/mlp.py tma_tiles): 128 rows leave
// 64 x 64 tiles the fastest. Each map parameter's binding carries the map's type: the host
// encodes it from the tensor.
// CHECK:      sync.stage @gemm1 {graph.bind = [#graph.bind<input 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 1 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<temp 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 2>], kernel = @gemm1_module::@gemm1, grid = array<i64: 2, 48>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 64, 64>}
// CHECK-NEXT: sync.stage @gemm2 {graph.bind = [#graph.bind<temp 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 3 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<result 0 as !tile.tensor_map<64x64xf16, swizzle 128>>, #graph.bind<input 4>], kernel = @gemm2_module::@gemm2, grid = array<i64: 2, 12>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 64, 64>}
// A GEMM1 tile writes 64 columns of H, one of GEMM2's 64-wide k-steps.
// CHECK-NEXT: sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
// CHECK-NEXT: sync.launch @gemm1 {priority = -1 : i64}
// CHECK-NEXT: sync.launch @gemm2 {stream = 1 : i64}

// The cuSync passes take the program as it is: RowSync generated, PDL, proved.
// SYNC:      sync.stage @gemm1 {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>
// SYNC:      sync.stage @gemm2 {{.*}}sync.progress = "@gemm1: programmatic dependent launch", sync.verified = "proved"
// SYNC:      sync.launch @gemm2 {pdl = true}
