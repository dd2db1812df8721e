// RUN: tilesync-opt %s --split-input-file -p dataflow-allot-ctas --verify-diagnostics | filecheck %s

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
// CHECK: allot_ctas_invalid.mlir:12:5: dataflow-allot-ctas: stage @act has no measured 'bsp_rate' (tiles per second, bulk-synchronous, a positive number)

// -----

// A rate that is not a number is no measurement either.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.stage @gemm1 {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 0x7FF8000000000000 : f64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64}
  }
}
// CHECK: allot_ctas_invalid.mlir:27:5: dataflow-allot-ctas: stage @gemm1 has no measured 'bsp_rate' (tiles per second, bulk-synchronous, a positive number), got nan

// -----

// Every stage's tiles weigh its rate against the last stage's: a count below one is named on
// its own stage (the last here), not on the first whose weight it spoils.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.stage @gemm1 {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = 8 : i64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, tiles = -8 : i64}
  }
}
// CHECK: allot_ctas_invalid.mlir:45:5: dataflow-allot-ctas: stage @act: 'tiles' must be a positive count, got -8

// -----

// Bytes a tile moves are a count, not a credit.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  dataflow.pipeline @mlp {
    dataflow.stage @gemm1 {kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64, dram_bytes = -4096.0 : f64}
    dataflow.stage @act {kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [], bsp_rate = 1.0e6 : f64}
  }
}
// CHECK: allot_ctas_invalid.mlir:60:5: dataflow-allot-ctas: stage @gemm1: 'dram_bytes' (bytes a tile) must be a number >= 0, got -4096
