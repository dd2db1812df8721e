// RUN: tilesync-opt %s -p 'dataflow-form-pipeline,dataflow-insert-queues' | filecheck %s

// One consumer reading one producer through two operands (x * x; Q and K of one QKV GEMM):
// one queue, taken once (its tiles are read once, whichever operand names them). Each
// dependency used to append the queue again ("lists queue @p_tiles twice").
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@f, grid = array<i64: 16>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @sq {kernel = @k::@f, grid = array<i64: 16>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "elementwise"}
  sync.dependency @p -> @sq operand 0 tiles (d0) -> (d0)
  sync.dependency @p -> @sq operand 1 tiles (d0) -> (d0)
}
// CHECK:      dataflow.queue @p_tiles
// CHECK:      dataflow.stage @p {{.*}}outputs = [@p_tiles]
// CHECK-NEXT: dataflow.stage @sq {{.*}}inputs = [@p_tiles], outputs = []
// CHECK-NOT:  dataflow.reads
