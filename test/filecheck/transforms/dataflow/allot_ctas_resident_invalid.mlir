// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=1}' --verify-diagnostics | filecheck %s
// Two stages whose kernels fit one block a SM, on one SM: no allotment of at least one CTA a
// stage resides at once, so the pass refuses rather than size a pipeline that would hang.
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
// CHECK: allot_ctas_resident_invalid.mlir:10:3: dataflow-allot-ctas: pipeline @mlp: no allotment of its stages resides at once
