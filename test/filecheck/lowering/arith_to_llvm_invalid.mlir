// RUN: tilesync-opt %s -p convert-arith-to-llvm --split-input-file --verify-diagnostics | filecheck %s

func.func @extended(%a: i32, %b: i32) -> i32 {
  %lo, %hi = arith.mului_extended %a, %b : i32
  func.return %lo : i32
}
// CHECK: arith_to_llvm_invalid.mlir:4:3: convert-arith-to-llvm: cannot lower 'arith.mului_extended': no lowering for this op or its types

// -----

func.func @f8(%a: f8E4M3FN, %b: f8E4M3FN) -> f8E4M3FN {
  %m = arith.maximumf %a, %b : f8E4M3FN
  func.return %m : f8E4M3FN
}
// CHECK: convert-arith-to-llvm: cannot lower 'arith.maximumf': no lowering for this op or its types
