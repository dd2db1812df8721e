// RUN: tilesync-opt %s -p dataflow-allot-ctas --verify-diagnostics | filecheck %s

// An allotment needs each stage's measured bulk-synchronous rate.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.stage @gemm1 {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = []}
  }
}
// CHECK: allot_ctas_invalid.mlir:12:5: dataflow-allot-ctas: stage @act has no measured 'bsp_rate' (tiles per second, bulk-synchronous)
