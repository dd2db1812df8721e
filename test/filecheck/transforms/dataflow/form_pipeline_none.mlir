// RUN: tilesync-opt %s -p 'dataflow-form-pipeline' | filecheck %s

// No two stages can run as a pipeline: @sum's two partials (split = 2) would each read
// @gemm's one tile (the dependency has no forall range to cut), and a queue hands an entry to
// one CTA. No pipeline forms, and the module says why instead of nothing.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @gemm {kernel = @k::@f, grid = array<i64: 8, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @sum {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@f}
  sync.dependency @gemm -> @sum operand 0 tiles (d0) -> (d0, 0)
}

// CHECK:     builtin.module attributes {dataflow.excluded = ["@sum: no queue serves its reads (producer tile (0, 0) of @gemm is read by 2 tiles of @sum_fanin: {{.*}}"]} {
// CHECK-NOT: dataflow.pipeline
// CHECK-NOT: dataflow.pipeline =
