// RUN: tilesync-opt %s -p 'dataflow-insert-queues' --verify-diagnostics | filecheck %s

// A queue entry holds whole elements of the producer's `dataflow.element`: a type without a
// size in memory (none) is refused at the producer stage.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
    gpu.func @add() kernel {
      gpu.return
    }
  }
  sync.stage @a {dataflow.kind = "gemm", dataflow.pipeline = @spatial, dataflow.element = none, kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>}
  sync.stage @b {dataflow.kind = "gemm", dataflow.pipeline = @spatial, kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  dataflow.pipeline @spatial {
    dataflow.stage @a {tiles = 8 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 8 : i64, inputs = [], outputs = []}
    dataflow.stage @b {tiles = 8 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 8 : i64, inputs = [], outputs = []}
  }
}
// CHECK: insert_queues_element_invalid.mlir:14:3: dataflow-insert-queues: 'dataflow.element': queue payload element type none has no known size in memory
