// RUN: tilesync-opt %s -p dataflow-split-reductions | filecheck %s

// Two chained split reductions, the consumer @r2 listed before @r1: each split sees the
// dependencies the one before it moved (r2's fan-in reads r1's final stage, never the erased
// @r1).
builtin.module {
  gpu.module @k {
    gpu.func @r1() kernel { gpu.return }
    gpu.func @r2() kernel { gpu.return }
    gpu.func @add() kernel { gpu.return }
  }
  sync.stage @r1 {kernel = @k::@r1, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@add, dataflow.pipeline = @p}
  sync.stage @r2 {kernel = @k::@r2, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@add, dataflow.pipeline = @p}
  sync.dependency @r1 -> @r2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  dataflow.pipeline @p {
    dataflow.stage @r2 {kernel = @k::@r2, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [], outputs = [], tiles = 4 : i64}
    dataflow.stage @r1 {kernel = @k::@r1, resource = #dataflow.resource<tensor>, ctas = 32 : i64, inputs = [], outputs = [], tiles = 32 : i64}
  }
}

// CHECK:      sync.stage @r1_fanin {{.*}}grid = array<i64: 4, 8, 2>
// CHECK-NEXT: sync.stage @r1_final {{.*}}grid = array<i64: 4, 8>
// CHECK-NEXT: sync.dependency @r1_fanin -> @r1_final operand 0 tiles (d0, d1)[s0] -> (d0, d1, s0) forall s0 in [0, 2)
// CHECK-NEXT: sync.stage @r2_fanin {{.*}}grid = array<i64: 4, 1, 2>
// CHECK-NEXT: sync.stage @r2_final {{.*}}grid = array<i64: 4, 1>
// CHECK-NEXT: sync.dependency @r2_fanin -> @r2_final operand 0 tiles (d0, d1)[s0] -> (d0, d1, s0) forall s0 in [0, 2)
// CHECK-NEXT: sync.dependency @r1_final -> @r2_fanin operand 0 tiles (d0, d1, d2)[s0] -> (d0, s0 + d2 * 4) forall s0 in [0, 4)
// CHECK-NOT:  @r1 ->
// CHECK:      dataflow.pipeline @p {
// CHECK-NEXT:   dataflow.stage @r2_fanin
// CHECK-NEXT:   dataflow.stage @r2_final
// CHECK-NEXT:   dataflow.stage @r1_fanin
// CHECK-NEXT:   dataflow.stage @r1_final
