// RUN: tilesync-opt %s --split-input-file --verify-diagnostics | filecheck %s

llvm.func @f(%v: i32) {
  %0 = llvmx.fptosi %v : i32 to i32
  llvm.return
}
// CHECK: llvmx.fptosi: expected a float operand and an integer result, got i32 to i32

// -----

llvm.func @f(%v: f32) {
  %0 = llvmx.uitofp %v : f32 to f32
  llvm.return
}
// CHECK: llvmx.uitofp: expected an integer operand and a float result, got f32 to f32

// -----

llvm.func @f(%p: !llvm.ptr<3>) {
  %0 = llvmx.addrspacecast %p : !llvm.ptr<3> to !llvm.ptr<3>
  llvm.return
}
// CHECK: llvmx.addrspacecast: source and result are both in address space 3

// -----

llvm.func @f(%v: i64) {
  %0 = llvmx.addrspacecast %v : i64 to !llvm.ptr
  llvm.return
}
// CHECK: llvmx.addrspacecast: expected pointer operand and result, got i64 to !llvm.ptr
