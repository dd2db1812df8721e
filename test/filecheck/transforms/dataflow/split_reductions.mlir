// RUN: tilesync-opt %s -p 'dataflow-form-pipeline{pipeline=mlp},dataflow-split-reductions' | filecheck %s
// A reduction that declares SIMT work (a sum over the batch) keeps it in its partials:
// RUN: sed -e 's/dataflow.split = 4 : i64,/dataflow.split = 4 : i64, dataflow.resource = #dataflow.resource<simt>,/' %s | tilesync-opt -p 'dataflow-form-pipeline{pipeline=mlp},dataflow-split-reductions' | filecheck %s --check-prefix=SIMT
// SIMT: dataflow.stage @gemm2_fanin {tiles = 16 : i64, kernel = @k::@gemm2, resource = #dataflow.resource<simt>
// A reduction that places its tiles in a larger buffer: the sums land there, the partials are
// the fan-in's own:
// RUN: sed -e 's/dataflow.split = 4 : i64,/dataflow.split = 4 : i64, output_map = affine_map<(d0, d1) -> (d0, d1 + 2048)>,/' %s | tilesync-opt -p 'dataflow-form-pipeline{pipeline=mlp},dataflow-split-reductions' | filecheck %s --check-prefix=PLACED
// PLACED-NOT: sync.stage @gemm2_fanin {{.*}}output_map
// PLACED:     sync.stage @gemm2_final {{.*}}output_map = affine_map<(d0, d1) -> (d0, (d1 + 2048))>

// The MLP's second GEMM (one column of tiles: every gemm1 tile goes to one of its tiles, as a
// queue hands it out) reduces over the hidden dimension (48 k-tiles): split into 4 partials
// (fan-in, on 4x the CTAs) and a final stage that adds them.
builtin.module {
  gpu.module @k {
    gpu.func @gemm1() kernel {
      gpu.return
    }
    gpu.func @gemm2() kernel {
      gpu.return
    }
    gpu.func @add_partials() kernel {
      gpu.return
    }
  }
  sync.stage @gemm1 {kernel = @k::@gemm1, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "gemm"}
  sync.stage @gemm2 {kernel = @k::@gemm2, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "reduction", dataflow.split = 4 : i64, dataflow.final_kernel = @k::@add_partials}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
  sync.launch @gemm1 {stream = 0 : i64}
  sync.launch @gemm2 {stream = 0 : i64}
}

// CHECK:      sync.stage @gemm2_fanin {dataflow.kind = "gemm", dataflow.pipeline = @mlp, kernel = @k::@gemm2, grid = array<i64: 4, 1, 4>
// CHECK-NEXT: sync.stage @gemm2_final {dataflow.kind = "elementwise", dataflow.pipeline = @mlp, kernel = @k::@add_partials, grid = array<i64: 4, 1>
// CHECK-NEXT: sync.dependency @gemm2_fanin -> @gemm2_final operand 0 tiles (d0, d1)[s0] -> (d0, d1, s0) forall s0 in [0, 4)
// Partial p reads k-tiles [12p, 12p + 12) of each gemm1 row.
// CHECK-NEXT: sync.dependency @gemm1 -> @gemm2_fanin operand 0 tiles (d0, d1, d2)[s0] -> (d0, s0 + d2 * 12) forall s0 in [0, 12)
// CHECK-NOT:  sync.stage @gemm2 {
// CHECK:      sync.launch @gemm1
// CHECK-NOT:  sync.launch @gemm2
// CHECK:      dataflow.pipeline @mlp {
// CHECK-NEXT:   dataflow.stage @gemm1 {tiles = 192 : i64, {{.*}}ctas = 132 : i64
// CHECK-NEXT:   dataflow.stage @gemm2_fanin {tiles = 16 : i64, kernel = @k::@gemm2, resource = #dataflow.resource<tensor>, ctas = 16 : i64
// CHECK-NEXT:   dataflow.stage @gemm2_final {tiles = 4 : i64, kernel = @k::@add_partials, resource = #dataflow.resource<simt>, ctas = 4 : i64
// CHECK-NEXT: }
