// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

builtin.module {
  llvm.func @ops(%p: !llvm.ptr<1>, %s: !llvm.ptr<3>, %g: !llvm.ptr, %v: i32, %f: f32, %w: i64) {
    %0 = llvmx.atomicrmw add %p, %v acq_rel syncscope("device") : !llvm.ptr<1>, i32
    %1 = llvmx.atomicrmw xchg %g, %w monotonic : !llvm.ptr, i64
    %2 = llvmx.atomicrmw fadd %p, %f seq_cst syncscope("block") align 4 : !llvm.ptr<1>, f32
    %3 = llvmx.atomicrmw umax %s, %v release syncscope("cluster") : !llvm.ptr<3>, i32
    %4, %5 = llvmx.cmpxchg %p, %v, %0 acq_rel monotonic syncscope("device") : !llvm.ptr<1>, i32
    %6, %7 = llvmx.cmpxchg weak %g, %w, %1 seq_cst seq_cst align 8 : !llvm.ptr, i64
    llvmx.fence acq_rel syncscope("device")
    llvmx.fence seq_cst
    %8 = llvmx.load volatile %p acquire syncscope("device") align 4 : !llvm.ptr<1> -> i32
    %9 = llvmx.load volatile %p : !llvm.ptr<1> -> i32
    %10 = llvmx.load %g monotonic {tag = "x"} : !llvm.ptr -> f32
    llvmx.store volatile %v, %p release syncscope("device") align 4 : i32, !llvm.ptr<1>
    llvmx.store %w, %g seq_cst : i64, !llvm.ptr
    llvmx.store volatile %f, %g : f32, !llvm.ptr
    %11 = llvmx.fptosi %f : f32 to i32
    %12 = llvmx.fptoui %f : f32 to i64
    %13 = llvmx.uitofp %w : i64 to f32
    %14 = llvmx.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr
    llvm.return
  }
}

// CHECK:      llvm.func @ops(%p: !llvm.ptr<1>, %s: !llvm.ptr<3>, %g: !llvm.ptr, %v: i32, %f: f32, %w: i64) {
// CHECK-NEXT:   %0 = llvmx.atomicrmw add %p, %v acq_rel syncscope("device") : !llvm.ptr<1>, i32
// CHECK-NEXT:   %1 = llvmx.atomicrmw xchg %g, %w monotonic : !llvm.ptr, i64
// CHECK-NEXT:   %2 = llvmx.atomicrmw fadd %p, %f seq_cst syncscope("block") align 4 : !llvm.ptr<1>, f32
// CHECK-NEXT:   %3 = llvmx.atomicrmw umax %s, %v release syncscope("cluster") : !llvm.ptr<3>, i32
// CHECK-NEXT:   %4, %5 = llvmx.cmpxchg %p, %v, %0 acq_rel monotonic syncscope("device") : !llvm.ptr<1>, i32
// CHECK-NEXT:   %6, %7 = llvmx.cmpxchg weak %g, %w, %1 seq_cst seq_cst align 8 : !llvm.ptr, i64
// CHECK-NEXT:   llvmx.fence acq_rel syncscope("device")
// CHECK-NEXT:   llvmx.fence seq_cst
// CHECK-NEXT:   %8 = llvmx.load volatile %p acquire syncscope("device") align 4 : !llvm.ptr<1> -> i32
// CHECK-NEXT:   %9 = llvmx.load volatile %p : !llvm.ptr<1> -> i32
// CHECK-NEXT:   %10 = llvmx.load %g monotonic {tag = "x"} : !llvm.ptr -> f32
// CHECK-NEXT:   llvmx.store volatile %v, %p release syncscope("device") align 4 : i32, !llvm.ptr<1>
// CHECK-NEXT:   llvmx.store %w, %g seq_cst : i64, !llvm.ptr
// CHECK-NEXT:   llvmx.store volatile %f, %g : f32, !llvm.ptr
// CHECK-NEXT:   %11 = llvmx.fptosi %f : f32 to i32
// CHECK-NEXT:   %12 = llvmx.fptoui %f : f32 to i64
// CHECK-NEXT:   %13 = llvmx.uitofp %w : i64 to f32
// CHECK-NEXT:   %14 = llvmx.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr
// CHECK-NEXT:   llvm.return
// CHECK-NEXT: }
