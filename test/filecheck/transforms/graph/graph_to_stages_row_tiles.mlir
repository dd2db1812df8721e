// RUN: tilesync-opt %s -p graph-to-stages | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages,sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// 192 rows: the wave model's first tiles, BM1 = 64 and BM2 = 128, give GEMM1 three row tiles
// and GEMM2 two, whose second would wait on GEMM1 row tiles 2 and 3 (of three). The pass takes
// the first GEMM1 tile whose row tiles GEMM2's cover whole (kernels/mlp.py
// rows_cover_whole_tiles): BM1 = 128, one GEMM1 row tile per GEMM2 row tile.
func.func @mlp(%x: tensor<192x12288xf16>, %w1: tensor<6144x12288xf16>, %w2: tensor<12288x6144xf16>) -> tensor<192x12288xf16> {
  %h = graph.linear %x, %w1 : (tensor<192x12288xf16>, tensor<6144x12288xf16>) -> tensor<192x6144xf16>
  %a = graph.gelu %h approximate "tanh" : tensor<192x6144xf16>
  %y = graph.linear %a, %w2 : (tensor<192x6144xf16>, tensor<12288x6144xf16>) -> tensor<192x12288xf16>
  func.return %y : tensor<192x12288xf16>
}

// CHECK:      sync.stage @gemm1 {{.*}} grid = array<i64: 2, 64>, {{.*}} tile = array<i64: 128, 96, 64>
// CHECK-NEXT: sync.stage @gemm2 {{.*}} grid = array<i64: 2, 64>, {{.*}} tile = array<i64: 128, 192, 64>
// CHECK-NEXT: sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0, s1] -> (d0, (s0 * 64 + s1 * 63) floordiv 96) forall s0 in [0, 96), s1 in [0, 2)

// sync-verify proves the program (before, graph-to-stages' output did not verify: GEMM1 row
// tile 3 is outside its grid).
// SYNC:       sync.stage @gemm1 {{.*}}sync.verified = "proved"
// SYNC:       sync.stage @gemm2 {{.*}}sync.verified = "proved"
// SYNC:       sync.dependency @gemm1 -> @gemm2
