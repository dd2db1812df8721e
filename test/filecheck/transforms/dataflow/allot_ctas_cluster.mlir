// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132 shared_slots=true}' | filecheck %s
// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132 shared_slots=true solver=milp}' | filecheck %s
// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132}' | filecheck %s --check-prefix=CLASSES

// A pipeline in clusters holds CTA c of every stage in cluster c, so its stages get one count:
// the most that one budget of 132 slots gives three stages, 44 (the pipeline unclustered would
// take 58 + 15 + 58, allot_ctas.mlir); the slowest stage binds.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  dataflow.pipeline @mlp cluster {
    dataflow.stage @gemm1 {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 1056 : i64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 4.0e6 : f64, tiles = 1056 : i64}
    dataflow.stage @gemm2 {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 2.0e6 : f64, tiles = 1056 : i64}
  }
}

// CHECK:      dataflow.pipeline @mlp cluster attributes {dataflow.allotment = "3.333e+05 items/s, bound by gemm1"} {
// CHECK-NEXT:   dataflow.stage @gemm1 {{.*}}ctas = 44 : i64
// CHECK-NEXT:   dataflow.stage @act {{.*}}ctas = 44 : i64
// CHECK-NEXT:   dataflow.stage @gemm2 {{.*}}ctas = 44 : i64

// In two budgets (a SIMT and a tensor CTA an SM), the two tensor stages take 66 each, and so
// the SIMT stage too.
// CLASSES:      dataflow.pipeline @mlp cluster attributes {dataflow.allotment = "5e+05 items/s, bound by gemm1"} {
// CLASSES-NEXT:   dataflow.stage @gemm1 {{.*}}ctas = 66 : i64
// CLASSES-NEXT:   dataflow.stage @act {{.*}}ctas = 66 : i64
// CLASSES-NEXT:   dataflow.stage @gemm2 {{.*}}ctas = 66 : i64
