// RUN: tilesync-opt %s -p 'dataflow-form-pipeline{pipeline=mlp sms=132}' | filecheck %s

// @embed gathers (excluded) and @side is bulk-synchronous (excluded); @l1 -> @side -> @l3
// leaves and re-enters any group holding @l1 and @l3, so the largest contiguous group is
// @l2 -> @l3 -> @norm, and @l1 is listed as left out for it.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @embed {kernel = @k::@f, grid = array<i64: 512>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gather"}
  sync.stage @l1 {kernel = @k::@f, grid = array<i64: 512>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @side {kernel = @k::@f, grid = array<i64: 512>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "bulk"}
  sync.stage @l2 {kernel = @k::@f, grid = array<i64: 512>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @l3 {kernel = @k::@f, grid = array<i64: 512>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 256>, dataflow.kind = "gemm"}
  sync.stage @norm {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 1024, 256>, dataflow.kind = "elementwise"}
  sync.dependency @embed -> @l1 operand 0 tiles (d0) -> (d0)
  sync.dependency @l1 -> @l2 operand 0 tiles (d0) -> (d0)
  sync.dependency @l1 -> @side operand 0 tiles (d0) -> (d0)
  sync.dependency @l2 -> @l3 operand 0 tiles (d0) -> (d0)
  sync.dependency @side -> @l3 operand 1 tiles (d0) -> (d0)
  sync.dependency @l3 -> @norm operand 0 tiles (d0)[s0] -> (d0 * 8 + s0) forall s0 in [0, 8)
}

// CHECK:      sync.stage @l1 {dataflow.kind = "gemm", kernel
// CHECK:      sync.stage @l2 {{.*}}dataflow.pipeline = @mlp
// CHECK:      sync.stage @l3 {{.*}}dataflow.pipeline = @mlp
// CHECK:      sync.stage @norm {{.*}}dataflow.pipeline = @mlp
// CHECK:      dataflow.pipeline @mlp attributes {dataflow.excluded = ["@embed: gathers across all its input", "@side: bulk-synchronous friendly", "@l1: the pipeline would not be contiguous: a path between it and the pipeline's stages runs outside, through @side"]} {
// CHECK-NEXT:   dataflow.stage @l2 {tiles = 512 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 132 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @l3 {tiles = 512 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 132 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @norm {tiles = 64 : i64, kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 64 : i64, inputs = [], outputs = []}
// CHECK-NEXT: }
