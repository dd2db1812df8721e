// RUN: tilesync-opt %s --split-input-file -p 'dataflow-form-pipeline{pipeline=attn},dataflow-split-reductions,dataflow-insert-queues' | filecheck %s

// A full-row softmax between two GEMMs: @softmax's tile i reads row i of @scores (8 tiles, the
// next 8 tickets: a queue serves it), but both tiles of @out's row i read @softmax's one row
// tile, which a queue hands to one CTA. The pipeline is @scores -> @softmax, with queues;
// @out stays outside, bulk-synchronous, and the pipeline says why.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  sync.stage @scores {kernel = @k::@f, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, dataflow.kind = "gemm"}
  sync.stage @softmax {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 512>, dataflow.kind = "elementwise"}
  sync.stage @out {kernel = @k::@f, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, dataflow.kind = "gemm"}
  sync.dependency @scores -> @softmax operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @softmax -> @out operand 0 tiles (d0, d1) -> (d0)
}
// CHECK:      dataflow.pipeline @attn attributes {dataflow.excluded = ["@out: no queue serves its reads (producer tile (0,) of @softmax is read by 2 tiles of @out: a queue hands each entry to one CTA of a stage (split @out's hidden dimension into stages))"]} {
// CHECK-NEXT:   dataflow.queue @scores_tiles
// CHECK-NEXT:   dataflow.stage @scores {{.*}}outputs = [@scores_tiles]
// CHECK-NEXT:   dataflow.stage @softmax {{.*}}dataflow.reads = {scores_tiles = 8 : i64}{{.*}}inputs = [@scores_tiles]
// CHECK-NEXT: }

// -----

// A split-K reduction @red also reads @b one tile per tile (a residual). Before the split each
// @b tile goes to one @red tile, but its partials will read both: judged as
// dataflow-split-reductions makes it read, @red stays outside (where the whole program was
// refused by dataflow-insert-queues after the split).
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  sync.stage @src {kernel = @k::@f, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, dataflow.kind = "gemm"}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, dataflow.kind = "elementwise"}
  sync.stage @red {kernel = @k::@f, grid = array<i64: 4, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@f}
  sync.dependency @src -> @b operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @src -> @red operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @b -> @red operand 1 tiles (d0, d1) -> (d0, d1)
}
// CHECK:      dataflow.pipeline @attn attributes {dataflow.excluded = ["@red: no queue serves its reads (producer tile (0, 0) of @b is read by 2 tiles of @red_fanin: a queue hands each entry to one CTA of a stage (split @red_fanin's hidden dimension into stages))"]} {
// CHECK-NEXT:   dataflow.queue @src_tiles
// CHECK-NEXT:   dataflow.stage @src
// CHECK-NEXT:   dataflow.stage @b
// CHECK-NEXT: }
