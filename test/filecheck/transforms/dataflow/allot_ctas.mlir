// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132}' | filecheck %s
// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132 dram_bytes_per_s=10000000000.0}' | filecheck %s --check-prefix=DRAM
// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132 shared_slots=true}' | filecheck %s --check-prefix=SHARED
// Two CTAs of a class on an SM share its pipes: two slots a class predict no more (and take
// no more CTAs) than one where the stages already fill the tensor cores:
// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132 slots=2}' | filecheck %s
// scipy's milp (HiGHS) solves the same program to the same allotment:
// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132 solver=milp}' | filecheck %s
// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132 shared_slots=true solver=milp}' | filecheck %s --check-prefix=SHARED
// RUN: not tilesync-opt %s -p 'dataflow-allot-ctas{solver=glpk}' 2>&1 | filecheck %s --check-prefix=SOLVER
// SOLVER: tilesync-opt: error: dataflow-allot-ctas: option 'solver' must be one of exact, milp

// Two tensor stages of equal measured rate share the SMs' tensor cores (66 CTAs each); the
// SIMT activation between them, 4x as fast, needs only 17 CTAs to keep up: 0.5 M items/s.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.stage @gemm1 {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 1024 : i64, dram_bytes = 65536 : i64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 4.0e6 : f64, tiles = 1024 : i64}
    dataflow.stage @gemm2 {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 1024 : i64}
  }
}

// CHECK:      dataflow.pipeline @mlp attributes {dataflow.allotment = "5e+05 items/s, bound by gemm1"} {
// CHECK-NEXT:   dataflow.stage @gemm1 {{.*}}ctas = 66 : i64
// CHECK-NEXT:   dataflow.stage @act {{.*}}ctas = 17 : i64
// CHECK-NEXT:   dataflow.stage @gemm2 {{.*}}ctas = 66 : i64

// With 10 GB/s of DRAM, the 64 KiB each item reads cap the pipeline at 1e10 / 65536 items/s,
// and the fewest CTAs that reach that rate are taken.
// DRAM:      dataflow.pipeline @mlp attributes {dataflow.allotment = "1.526e+05 items/s, bound by DRAM"} {
// DRAM-NEXT:   dataflow.stage @gemm1 {{.*}}ctas = 21 : i64
// DRAM-NEXT:   dataflow.stage @act {{.*}}ctas = 6 : i64
// DRAM-NEXT:   dataflow.stage @gemm2 {{.*}}ctas = 21 : i64

// With shared_slots (the stages are one persistent kernel's blocks, one an SM), the SIMT stage's
// CTAs come out of the same 132: 58 + 15 + 58 (15 x 4 >= 58), 0.4394 M items/s.
// SHARED:      dataflow.pipeline @mlp attributes {dataflow.allotment = "4.394e+05 items/s, bound by gemm1"} {
// SHARED-NEXT:   dataflow.stage @gemm1 {{.*}}ctas = 58 : i64
// SHARED-NEXT:   dataflow.stage @act {{.*}}ctas = 15 : i64
// SHARED-NEXT:   dataflow.stage @gemm2 {{.*}}ctas = 58 : i64
