// RUN: tilesync-opt %s -p 'dataflow-form-pipeline{pipeline=mlp sms=132},dataflow-split-reductions,dataflow-insert-queues' | filecheck %s

// @l1 feeds @l2 and @tap (multicast); @l3 reduces pairs of @l2 tiles and is split into 2
// partials and a final stage: every edge inside the pipeline becomes a queue pinned in L2.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
    gpu.func @add() kernel {
      gpu.return
    }
  }
  sync.stage @l1 {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @l2 {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @tap {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "elementwise"}
  sync.stage @l3 {kernel = @k::@f, grid = array<i64: 32>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@add, dataflow.element = f32}
  sync.dependency @l1 -> @l2 operand 0 tiles (d0) -> (d0)
  sync.dependency @l1 -> @tap operand 0 tiles (d0) -> (d0)
  sync.dependency @l2 -> @l3 operand 0 tiles (d0)[s0] -> (d0 * 2 + s0) forall s0 in [0, 2)
}

// Consumers that read one entry per tile get two rounds of their CTAs; each final tile holds
// its 2 partials, taken by one CTA (several, each drawing a tile's tickets one at a time, could
// each hold one partial of a tile and wait for each other), so that ring takes (2 + 1) x 1.
// CHECK:      dataflow.pipeline @mlp {
// CHECK-NEXT:   dataflow.queue @l1_tiles pin_l2 : !dataflow.queue<128 x tensor<128x256xf16>>
// CHECK-NEXT:   dataflow.queue @l2_tiles pin_l2 : !dataflow.queue<128 x tensor<128x256xf16>>
// CHECK-NEXT:   dataflow.queue @l3_fanin_tiles pin_l2 : !dataflow.queue<3 x tensor<128x64xf32>>
// CHECK-NEXT:   dataflow.stage @l1 {tiles = 64 : i64, dataflow.unbound, {{.*}}inputs = [], outputs = [@l1_tiles]}
// CHECK-NEXT:   dataflow.stage @l2 {tiles = 64 : i64, dataflow.unbound, {{.*}}inputs = [@l1_tiles], outputs = [@l2_tiles]}
// CHECK-NEXT:   dataflow.stage @tap {tiles = 64 : i64, dataflow.unbound, {{.*}}resource = #dataflow.resource<simt>, ctas = 64 : i64, inputs = [@l1_tiles], outputs = []}
// CHECK-NEXT:   dataflow.stage @l3_fanin {tiles = 64 : i64, dataflow.unbound, {{.*}}inputs = [@l2_tiles], outputs = [@l3_fanin_tiles]}
// CHECK-NEXT:   dataflow.stage @l3_final {tiles = 32 : i64, dataflow.reads = {l3_fanin_tiles = 2 : i64}, dataflow.unbound, kernel = @k::@add, {{.*}}ctas = 1 : i64, inputs = [@l3_fanin_tiles], outputs = []}
// CHECK-NEXT: }
