// RUN: tilesync-opt %s -p dataflow-form-pipeline --split-input-file --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s -p dataflow-form-pipeline,dataflow-form-pipeline --split-input-file --verify-diagnostics | filecheck %s --check-prefix=TWICE

// A dependency cycle: a spatial pipeline runs part of a DAG (Kitsune §5.1). Refused at the
// dependency that closes it.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, dataflow.kind = "gemm"}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, dataflow.kind = "elementwise"}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, dataflow.kind = "elementwise"}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @c operand 0 tiles (d0) -> (d0)
  sync.dependency @c -> @a operand 0 tiles (d0) -> (d0)
}
// CHECK: form_pipeline_cycle_invalid.mlir:17:3: dataflow-form-pipeline: the dependencies form a cycle @a -> @b -> @c -> @a: a spatial pipeline runs a part of a graph without cycles
// TWICE: form_pipeline_cycle_invalid.mlir:17:3: dataflow-form-pipeline: the dependencies form a cycle

// -----

// Two chains: the first run forms @spatial of one, a second run of the same name would
// define @spatial again (the other chain needs another name).
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, dataflow.kind = "gemm"}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, dataflow.kind = "elementwise"}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, dataflow.kind = "gemm"}
  sync.stage @d {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, dataflow.kind = "elementwise"}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @c -> @d operand 0 tiles (d0) -> (d0)
}
// CHECK: dataflow.pipeline @spatial
// TWICE: form_pipeline_cycle_invalid.mlir:34:3: dataflow-form-pipeline: a pipeline @spatial exists already: name the next one (pipeline=NAME) to form another of @c, @d
