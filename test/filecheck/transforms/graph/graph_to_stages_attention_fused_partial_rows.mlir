// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused}' | filecheck %s
// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused},sync-generate-policies,sync-insert-post-wait,sync-use-pdl,sync-verify' | filecheck %s --check-prefix=SYNC

// One head of 64 over 192 tokens, fused: the output GEMM's second row of 128-row tiles
// covers query blocks 2 and 3 of 64 rows, and there are three: its range reaches past the
// attention grid, so the dependency is clipped (a block past the grid is read by nobody).
// Unclipped, the IR after graph-to-stages did not verify (tile (1, 0) of @out read (3, 0)).

// CHECK:      sync.stage @attention {{.*}} grid = array<i64: 3, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
// CHECK-NEXT: sync.stage @out {{.*}} grid = array<i64: 2, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 64, 64>}
// CHECK:      sync.dependency @attention -> @out operand 0 tiles (d0, d1)[s0, s1] -> (d0 * 128 floordiv 64 + s1, s0 * 64 floordiv 64) forall s0 in [0, 1), s1 in [0, 2) clipped{{$}}

// SYNC: sync.stage @attention {{.*}} sync.verified = "proved"
// SYNC: sync.stage @out {{.*}} sync.verified = "proved"
func.func @attention(%x: tensor<192x64xf16>, %wqkv: tensor<192x64xf16>, %wo: tensor<64x64xf16>) -> tensor<192x64xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<192x64xf16>, tensor<192x64xf16>) -> tensor<192x192xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<192x192xf16>) -> (tensor<192x64xf16>, tensor<192x64xf16>, tensor<192x64xf16>)
  %s = graph.linear %q, %k : (tensor<192x64xf16>, tensor<192x64xf16>) -> tensor<192x192xf16>
  %p = graph.softmax %s dim -1 scale 0.125 : tensor<192x192xf16>
  %o = graph.matmul %p, %v : (tensor<192x192xf16>, tensor<192x64xf16>) -> tensor<192x64xf16>
  %y = graph.linear %o, %wo : (tensor<192x64xf16>, tensor<64x64xf16>) -> tensor<192x64xf16>
  func.return %y : tensor<192x64xf16>
}
