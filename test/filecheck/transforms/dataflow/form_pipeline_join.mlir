// RUN: tilesync-opt %s -p 'dataflow-form-pipeline{pipeline=ffn sms=132}' | filecheck %s

// LLaMA's SwiGLU (Kitsune Fig. 2(a), 9): @gate and @up both read X from memory (two sources)
// and @swiglu joins their tiles; @down reads SwiGLU's rows. Grown from @gate, the group takes
// @swiglu (it reads @gate), then @up (@swiglu reads it) and @down: all four run spatially.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @gate {kernel = @k::@f, grid = array<i64: 16, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @up {kernel = @k::@f, grid = array<i64: 16, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @swiglu {kernel = @k::@f, grid = array<i64: 16, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "elementwise"}
  sync.stage @down {kernel = @k::@f, grid = array<i64: 16>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 1024>, dataflow.kind = "gemm"}
  sync.dependency @gate -> @swiglu operand 0 tiles (d0, d1) -> (d0, d1)
  sync.dependency @up -> @swiglu operand 1 tiles (d0, d1) -> (d0, d1)
  sync.dependency @swiglu -> @down operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 8)
}

// CHECK:      dataflow.pipeline @ffn {
// CHECK-NEXT:   dataflow.stage @gate {tiles = 128 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 128 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @up {tiles = 128 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 128 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @swiglu {tiles = 128 : i64, kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 128 : i64, inputs = [], outputs = []}
// CHECK-NEXT:   dataflow.stage @down {tiles = 16 : i64, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 16 : i64, inputs = [], outputs = []}
// CHECK-NEXT: }
