// RUN: tilesync-opt %s -p convert-func-to-llvm --split-input-file --verify-diagnostics | filecheck %s

// gpu.return's verifier does not compare with the function's results (found by the fuzzer:
// LLVM then refused the module with no location).
gpu.module @kernels {
  gpu.func @helper(%x: f32) -> vector<4xf32> {
    gpu.return %x : f32
  }
}
// CHECK: func_to_llvm_invalid.mlir:7:5: convert-func-to-llvm: cannot lower 'gpu.return': returns f32 where its function returns vector<4xf32>

// -----

gpu.module @kernels {
  gpu.func @nothing(%x: f32) -> f32 {
    gpu.return
  }
}
// CHECK: convert-func-to-llvm: cannot lower 'gpu.return': returns nothing where its function returns f32
