// RUN: tilesync-opt %s --split-input-file -p 'dataflow-allot-ctas{sms=132},dataflow-verify{sms=132}' | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p 'dataflow-allot-ctas{sms=132 solver=milp},dataflow-verify{sms=132}' | filecheck %s
// The allotment keeps a pipeline's CTAs resident at once: one SIMT and one tensor CTA a SM
// would give each stage 132 CTAs, but where the pipeline allows 132 in all (max_ctas), or its
// kernels fit one block a SM (256 threads of 255 registers), they get 66 each, which
// dataflow-verify proves co-resident (it refused the 132 + 132 the allotment once made).

builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @mlp max_ctas(132) {
    dataflow.stage @gemm {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 1024 : i64, registers = 32 : i64, shared_bytes = 0 : i64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 1024 : i64, registers = 32 : i64, shared_bytes = 0 : i64}
  }
}
// CHECK:      dataflow.pipeline @mlp max_ctas(132) attributes {dataflow.allotment = "5e+05 items/s, bound by gemm", dataflow.verified = "co-resident: all 132 blocks
// CHECK-NEXT:   dataflow.stage @gemm {{.*}}ctas = 66 : i64
// CHECK-NEXT:   dataflow.stage @act {{.*}}ctas = 66 : i64

// -----

builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.stage @gemm {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 1024 : i64, registers = 255 : i64, shared_bytes = 0 : i64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 1024 : i64, registers = 255 : i64, shared_bytes = 0 : i64}
  }
}
// CHECK:      dataflow.pipeline @mlp attributes {dataflow.allotment = "5e+05 items/s, bound by gemm", dataflow.verified = "co-resident: all 132 blocks are co-resident (at most 132 = 132 SMs x 1 blocks per SM)
// CHECK-NEXT:   dataflow.stage @gemm {{.*}}ctas = 66 : i64
// CHECK-NEXT:   dataflow.stage @act {{.*}}ctas = 66 : i64
