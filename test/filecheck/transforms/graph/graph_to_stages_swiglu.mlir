// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s

// LLaMA's MLP, down(silu(gate(x)) * up(x)), 512 -> 1408 -> 512 on 32 tokens (bf16): the gate and
// up projections become one GEMM whose weight interleaves their rows in blocks of 8 (gate_up)
// and whose epilogue computes silu(gate) * up; one warpgroup per tile (BM = 64) for so few rows.
func.func @llama_mlp(%x: tensor<32x512xbf16>, %wg: tensor<1408x512xbf16>, %wu: tensor<1408x512xbf16>, %wd: tensor<512x1408xbf16>) -> tensor<32x512xbf16> {
  %g = graph.linear %x, %wg : (tensor<32x512xbf16>, tensor<1408x512xbf16>) -> tensor<32x1408xbf16>
  %u = graph.linear %x, %wu : (tensor<32x512xbf16>, tensor<1408x512xbf16>) -> tensor<32x1408xbf16>
  %s = graph.silu %g : tensor<32x1408xbf16>
  %h = graph.mul %u, %s : tensor<32x1408xbf16>
  %y = graph.linear %h, %wd : (tensor<32x1408xbf16>, tensor<512x1408xbf16>) -> tensor<32x512xbf16>
  func.return %y : tensor<32x512xbf16>
}

// CHECK:      builtin.module attributes {gpu.container_module, graph.signature = {{.*}}, graph.temps = [tensor<32x1408xbf16>]} {
// CHECK:      gpu.func @gemm1(%A: memref<32x512xbf16>, %B: memref<2816x512xbf16>, %C: memref<32x1408xbf16>) kernel
// silu(gate) = gate / (1 + exp(-gate)), times up.
// CHECK:      math.exp
// CHECK:      gpu.func @gemm2(%A: memref<32x1408xbf16>, %B: memref<512x1408xbf16>, %C: memref<32x512xbf16>) kernel
// CHECK:      sync.stage @gemm1 {graph.bind = [#graph.bind<input 0>, #graph.bind<gate_up 1, 2>, #graph.bind<temp 0>], kernel = @gemm1_module::@gemm1, grid = array<i64: 1, 22>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64, 64>}
// CHECK-NEXT: sync.stage @gemm2 {graph.bind = [#graph.bind<temp 0>, #graph.bind<input 3>, #graph.bind<result 0>], kernel = @gemm2_module::@gemm2, grid = array<i64: 1, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64, 64>}
// A GEMM1 block of 128 gate|up columns writes 64 columns of H (the stage's tile): one GEMM2
// k-step.
// CHECK-NEXT: sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 22)
