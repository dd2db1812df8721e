// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

builtin.module {
  llvm.func @ops(%s: !llvm.ptr<3>, %f: f32, %w: i64) {
    %0 = llvmx.fptosi %f : f32 to i32
    %1 = llvmx.fptoui %f : f32 to i64
    %2 = llvmx.uitofp %w : i64 to f32
    %3 = llvmx.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr
    llvm.return
  }
}

// CHECK:      llvm.func @ops(%s: !llvm.ptr<3>, %f: f32, %w: i64) {
// CHECK-NEXT:   %0 = llvmx.fptosi %f : f32 to i32
// CHECK-NEXT:   %1 = llvmx.fptoui %f : f32 to i64
// CHECK-NEXT:   %2 = llvmx.uitofp %w : i64 to f32
// CHECK-NEXT:   %3 = llvmx.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr
// CHECK-NEXT:   llvm.return
// CHECK-NEXT: }
