// RUN: not tilesync compile %s 2>&1 | filecheck %s
// RUN: not tilesync compile %s --emit llvm 2>&1 | filecheck %s
// RUN: not tilesync-opt %s -t ptx 2>&1 | filecheck %s
// A program with host code only has no kernel to compile: an error, not exit 0 and no output.
func.func @f(%x: f32) -> f32 {
  %0 = arith.addf %x, %x : f32
  func.return %0 : f32
}

// CHECK: compile_nothing_to_compile.mlir:5:1: error: the program has no gpu.module (only host code): there is no kernel to compile
// CHECK-NOT: Traceback
