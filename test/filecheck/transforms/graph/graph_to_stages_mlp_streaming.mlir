// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify{sms=132}' | filecheck %s --check-prefix=SYNC

// LLaMA's MLP on 4 rows (decoding): both GEMMs stream their weights in 16-row mma.sync tiles
// (kernels/choice.py streaming_config). GEMM1 (SwiGLU, 5632 gate/up columns) in 48-column
// tiles, 118 of them on 132 SMs, each writing 24 columns of H (the stage's tile); GEMM2 (1024
// columns) in 16 columns, 64 tiles, 22 k-steps of 128 over H's 2816 columns: a k-step reads
// the GEMM1 tiles its columns straddle, at most 6 (s1), which sync-verify checks.
func.func @llama_mlp(%x: tensor<4x1024xf16>, %wg: tensor<2816x1024xf16>, %wu: tensor<2816x1024xf16>, %wd: tensor<1024x2816xf16>) -> tensor<4x1024xf16> {
  %g = graph.linear %x, %wg : (tensor<4x1024xf16>, tensor<2816x1024xf16>) -> tensor<4x2816xf16>
  %u = graph.linear %x, %wu : (tensor<4x1024xf16>, tensor<2816x1024xf16>) -> tensor<4x2816xf16>
  %s = graph.silu %g : tensor<4x2816xf16>
  %h = graph.mul %u, %s : tensor<4x2816xf16>
  %y = graph.linear %h, %wd : (tensor<4x2816xf16>, tensor<1024x2816xf16>) -> tensor<4x1024xf16>
  func.return %y : tensor<4x1024xf16>
}

// CHECK:      sync.stage @gemm1 {{.*}}grid = array<i64: 1, 118>, block = array<i64: 96, 1, 1>, tile = array<i64: 16, 24, 128>}
// CHECK-NEXT: sync.stage @gemm2 {{.*}}grid = array<i64: 1, 64>, block = array<i64: 32, 1, 1>, tile = array<i64: 16, 16, 128>}
// CHECK-NEXT: sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0, s1] -> (d0, s0 * 128 floordiv 24 + s1) forall s0 in [0, 22), s1 in [0, 6){{$}}

// SYNC: sync.stage @gemm1 {{.*}} sync.verified = "proved"
// SYNC: sync.stage @gemm2 {{.*}} sync.verified = "proved"
