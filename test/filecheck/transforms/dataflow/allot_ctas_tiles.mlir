// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132}' | filecheck %s
// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132 solver=milp}' | filecheck %s

// A launch moves 16 tiles of @gemm (a split-K GEMM's, say) and 16 of @act: a 17th CTA of
// either would have no tile. @gemm's 16 CTAs bound the pipeline (the model once gave it 66,
// 50 of them idle, and took them from the co-residency budget); @act needs 4 to keep up.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  dataflow.pipeline @few {
    dataflow.stage @gemm {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 16 : i64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 4.0e6 : f64, tiles = 16 : i64}
  }
}
// CHECK:      dataflow.pipeline @few attributes {dataflow.allotment = "{{.*}} items/s, bound by gemm"} {
// CHECK-NEXT:   dataflow.stage @gemm {{.*}}ctas = 16 : i64
// CHECK-NEXT:   dataflow.stage @act {{.*}}ctas = 4 : i64
