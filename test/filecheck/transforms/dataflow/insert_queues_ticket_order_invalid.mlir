// RUN: tilesync-opt %s --split-input-file -p 'dataflow-insert-queues' --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p 'dataflow-form-pipeline{pipeline=formed}' | filecheck %s --check-prefix=FORM

// One producer read by rows (@rows: tile i reads @p's tiles 4i .. 4i + 3) and by columns
// (@cols: tile i reads tiles i, i + 4, i + 8, i + 12). Tickets name @p's tiles in row-major
// order and a consumer tile takes consecutive tickets, so @cols would sum four tiles of one
// row instead of its column: a pipeline written by hand with all three is refused, and
// dataflow-form-pipeline forms one of @p and @rows, @cols left bulk-synchronous.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm", dataflow.pipeline = @spatial}
  sync.stage @rows {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 512>, dataflow.kind = "elementwise", dataflow.pipeline = @spatial}
  sync.stage @cols {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 512, 128>, dataflow.kind = "elementwise", dataflow.pipeline = @spatial}
  sync.dependency @p -> @rows operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 4)
  sync.dependency @p -> @cols operand 0 tiles (d0)[s0] -> (s0, d0) forall s0 in [0, 4)
  dataflow.pipeline @spatial {
    dataflow.stage @p {tiles = 16 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 16 : i64, inputs = [], outputs = []}
    dataflow.stage @rows {tiles = 4 : i64, kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = []}
    dataflow.stage @cols {tiles = 4 : i64, kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = []}
  }
}
// CHECK: insert_queues_ticket_order_invalid.mlir:19:3: dataflow-insert-queues: tile (0,) of @cols reads the @p tiles of tickets [0, 4, 8, 12], but takes tickets 0..3: tickets name tiles in row-major order, so a tile's entries must be the next 4 of @p's tiles

// -----

builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @rows {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 512>, dataflow.kind = "elementwise"}
  sync.stage @cols {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 512, 128>, dataflow.kind = "elementwise"}
  sync.dependency @p -> @rows operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 4)
  sync.dependency @p -> @cols operand 0 tiles (d0)[s0] -> (s0, d0) forall s0 in [0, 4)
}
// FORM:      dataflow.pipeline @formed attributes {dataflow.excluded = ["@cols: no queue serves its reads (tile (0,) of @cols reads the @p tiles of tickets [0, 4, 8, 12], but takes tickets 0..3: tickets name tiles in row-major order, so a tile's entries must be the next 4 of @p's tiles)"]} {
// FORM-NEXT:   dataflow.stage @p
// FORM-NEXT:   dataflow.stage @rows
// FORM-NEXT: }
