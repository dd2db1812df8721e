// RUN: tilesync-opt %s -p 'dataflow-form-pipeline{pipeline=ffn sms=132}' | filecheck %s
// The rates measured of the stages bulk-synchronously, written on the stage program, go with
// them into the pipeline, so dataflow-allot-ctas can size it straight away:
// RUN: tilesync-opt %s -p 'dataflow-form-pipeline{pipeline=ffn sms=132},dataflow-allot-ctas' | filecheck %s --check-prefix=ALLOT

// LLaMA's SwiGLU (Kitsune Fig. 2(a), 9): @gate and @up both read X from memory (two sources)
// and @swiglu joins their tiles; @down reads SwiGLU's rows. Grown from @gate, the group takes
// @swiglu (it reads @gate), then @up (@swiglu reads it) and @down: all four run spatially.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @gate {kernel = @k::@f, grid = array<i64: 16, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm", bsp_rate = 1.0e6 : f64}
  sync.stage @up {kernel = @k::@f, grid = array<i64: 16, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm", bsp_rate = 1.0e6 : f64}
  sync.stage @swiglu {kernel = @k::@f, grid = array<i64: 16, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "elementwise", bsp_rate = 4.0e6 : f64}
  sync.stage @down {kernel = @k::@f, grid = array<i64: 16>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 1024>, dataflow.kind = "gemm", bsp_rate = 1.25e5 : f64}
  sync.dependency @gate -> @swiglu operand 0 tiles (d0, d1) -> (d0, d1)
  sync.dependency @up -> @swiglu operand 1 tiles (d0, d1) -> (d0, d1)
  sync.dependency @swiglu -> @down operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 8)
}

// CHECK:      dataflow.pipeline @ffn {
// CHECK-NEXT:   dataflow.stage @gate {tiles = 128 : i64, bsp_rate = 1.000000e+06 : f64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 128 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @up {tiles = 128 : i64, bsp_rate = 1.000000e+06 : f64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 128 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @swiglu {tiles = 128 : i64, bsp_rate = 4.000000e+06 : f64, kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 128 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @down {tiles = 16 : i64, bsp_rate = 1.250000e+05 : f64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 16 : i64, inputs = [], outputs = []}
// CHECK-NEXT: }

// @down's 16 tiles cap it at 16 CTAs (1.25e5 / 132 a CTA: 1.5e4 items/s); @gate and @up (8
// tiles an item) need as many, @swiglu, 4x as fast, a quarter.
// ALLOT:      dataflow.pipeline @ffn attributes {dataflow.allotment = "1.515e+04 items/s
// ALLOT-NEXT:   dataflow.stage @gate {tiles = 128 : i64, bsp_rate = 1.000000e+06 : f64, {{.*}}ctas = 16 : i64
// ALLOT-NEXT:   dataflow.stage @up {{.*}}ctas = 16 : i64
// ALLOT-NEXT:   dataflow.stage @swiglu {{.*}}ctas = 4 : i64
// ALLOT-NEXT:   dataflow.stage @down {{.*}}ctas = 16 : i64
