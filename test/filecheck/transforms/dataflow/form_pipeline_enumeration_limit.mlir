// RUN: tilesync-opt %s -p 'dataflow-form-pipeline{pipeline=p},dataflow-split-reductions,dataflow-insert-queues' | filecheck %s

// A reduction split 2^31 ways (the fuzzer's MemoryError, seed 20261206): its partials' grid of
// 4 x 2^31 tiles is no launch grid, so it is never split nor its reads enumerated: it stays
// outside the pipeline, which says why.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  sync.stage @scores {kernel = @k::@f, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, dataflow.kind = "gemm"}
  sync.stage @softmax {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 512>, dataflow.kind = "elementwise"}
  sync.stage @red {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, dataflow.kind = "reduction", dataflow.split = 2147483648 : i64, dataflow.final_kernel = @k::@f}
  sync.dependency @scores -> @softmax operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @softmax -> @red operand 0 tiles (d0) -> (d0)
}
// CHECK:      dataflow.pipeline @p attributes {dataflow.excluded = ["@red: reduction @red cannot split into 2147483648 partials: its fan-in's grid [4, 2147483648] (the partial index as one more dimension) is no launch grid: grid dimension y must be in [1, 65535], got 2147483648"]} {
// CHECK-NEXT:   dataflow.queue @scores_tiles
// CHECK-NEXT:   dataflow.stage @scores
// CHECK-NEXT:   dataflow.stage @softmax
// CHECK-NEXT: }
