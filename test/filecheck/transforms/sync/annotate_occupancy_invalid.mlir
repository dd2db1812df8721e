// RUN: tilesync-opt %s -p sync-annotate-occupancy --split-input-file --verify-diagnostics | filecheck %s

builtin.module {
  // 1024 threads x 128 registers: 131072 registers per block, twice the SM's register file.
  sync.stage @fat {kernel = @kernels::@gemm, grid = array<i64: 8>, block = array<i64: 1024>, tile = array<i64: 1>, registers = 128 : i64}
}
// CHECK: sync-annotate-occupancy: stage @fat cannot run on sm_90: 131072 registers per block, more than 65536 (block (1024,), 128 registers, 0 bytes of shared memory)

// -----

builtin.module {
  sync.stage @huge {kernel = @kernels::@gemm, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>, shared_bytes = 200000 : i64, dynamic_shared_bytes = 40000 : i64}
}
// CHECK: sync-annotate-occupancy: stage @huge cannot run on sm_90: 240000 bytes of shared memory per block, more than 232448

// -----

builtin.module {
  sync.stage @typo {kernel = @kernels::@gemm, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>, registers = "many"}
}
// CHECK: sync-annotate-occupancy: stage @typo: attribute 'registers' must be an integer, got "many"
