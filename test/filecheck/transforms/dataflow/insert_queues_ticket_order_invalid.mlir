// RUN: tilesync-opt %s -p 'dataflow-form-pipeline,dataflow-insert-queues' --verify-diagnostics | filecheck %s

// One producer read by rows (@rows: tile i reads @p's tiles 4i .. 4i + 3) and by columns
// (@cols: tile i reads tiles i, i + 4, i + 8, i + 12). Tickets name @p's tiles in row-major
// order and a consumer tile takes consecutive tickets, so @cols would sum four tiles of one
// row instead of its column: refused.
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
// CHECK: insert_queues_ticket_order_invalid.mlir:17:3: dataflow-insert-queues: tile (0,) of @cols reads the @p tiles of tickets [0, 4, 8, 12], but takes tickets 0..3: tickets name tiles in row-major order, so a tile's entries must be the next 4 of @p's tiles
