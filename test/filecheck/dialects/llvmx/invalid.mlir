// RUN: tilesync-opt %s --split-input-file --verify-diagnostics | filecheck %s

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  %0 = llvmx.atomicrmw add %p, %v unordered : !llvm.ptr<1>, i32
  llvm.return
}
// CHECK: llvmx.atomicrmw: invalid ordering 'unordered', expected one of 'monotonic', 'acquire', 'release', 'acq_rel', 'seq_cst'

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  %0 = llvmx.atomicrmw add %p, %v monotonic syncscope("gpu") : !llvm.ptr<1>, i32
  llvm.return
}
// CHECK: llvmx.atomicrmw: invalid syncscope 'gpu', expected one of '' (system), 'block', 'cluster', 'device'

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  %0 = llvmx.atomicrmw mul %p, %v monotonic : !llvm.ptr<1>, i32
  llvm.return
}
// CHECK: llvmx.atomicrmw: invalid binary operation 'mul'

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  %0 = llvmx.atomicrmw fadd %p, %v monotonic : !llvm.ptr<1>, i32
  llvm.return
}
// CHECK: llvmx.atomicrmw: 'fadd' needs a floating-point value, got i32

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: f32) {
  %0 = llvmx.atomicrmw add %p, %v monotonic : !llvm.ptr<1>, f32
  llvm.return
}
// CHECK: llvmx.atomicrmw: 'add' needs an integer value, got f32

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  %0, %1 = llvmx.cmpxchg %p, %v, %v monotonic acquire : !llvm.ptr<1>, i32
  llvm.return
}
// CHECK: llvmx.cmpxchg: failure ordering 'acquire' is stronger than success ordering 'monotonic'

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  %0, %1 = llvmx.cmpxchg %p, %v, %v acq_rel seq_cst : !llvm.ptr<1>, i32
  llvm.return
}
// CHECK: llvmx.cmpxchg: failure ordering 'seq_cst' is stronger than success ordering 'acq_rel'

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  %0, %1 = llvmx.cmpxchg %p, %v, %v acq_rel release : !llvm.ptr<1>, i32
  llvm.return
}
// CHECK: llvmx.cmpxchg: invalid failure ordering 'release', expected one of 'monotonic', 'acquire', 'seq_cst'

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32, %w: i64) {
  %0, %1 = "llvmx.cmpxchg"(%p, %v, %w) <{success_ordering = "acq_rel", failure_ordering = "monotonic"}> : (!llvm.ptr<1>, i32, i64) -> (i32, i1)
  llvm.return
}
// CHECK: llvmx.cmpxchg: compared value type i32 must match new value type i64

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: f32) {
  %0, %1 = llvmx.cmpxchg %p, %v, %v acq_rel acquire : !llvm.ptr<1>, f32
  llvm.return
}
// CHECK: llvmx.cmpxchg: needs an integer or pointer value, got f32

// -----

llvm.func @f() {
  llvmx.fence monotonic syncscope("device")
  llvm.return
}
// CHECK: llvmx.fence: invalid ordering 'monotonic', expected one of 'acquire', 'release', 'acq_rel', 'seq_cst'

// -----

llvm.func @f(%p: !llvm.ptr<1>) {
  %0 = llvmx.load %p release syncscope("device") : !llvm.ptr<1> -> i32
  llvm.return
}
// CHECK: llvmx.load: invalid ordering 'release', expected one of 'not_atomic', 'unordered', 'monotonic', 'acquire', 'seq_cst'

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  llvmx.store %v, %p acquire : i32, !llvm.ptr<1>
  llvm.return
}
// CHECK: llvmx.store: invalid ordering 'acquire', expected one of 'not_atomic', 'unordered', 'monotonic', 'release', 'seq_cst'

// -----

llvm.func @f(%p: !llvm.ptr<1>, %v: i32) {
  llvmx.store volatile %v, %p syncscope("device") : i32, !llvm.ptr<1>
  llvm.return
}
// CHECK: llvmx.store: a syncscope needs an atomic ordering

// -----

llvm.func @f(%p: !llvm.ptr<1>) {
  %0 = llvmx.load %p acquire : !llvm.ptr<1> -> !llvm.struct<(i32, i32)>
  llvm.return
}
// CHECK: llvmx.load: an atomic access needs an integer, float or pointer type, got !llvm.struct<(i32, i32)>

// -----

llvm.func @f(%v: i32) {
  %0 = "llvmx.load"(%v) <{ordering = "acquire"}> : (i32) -> i32
  llvm.return
}
// CHECK: operand 'ptr' at position 0 does not verify: i32 should be of base attribute llvm.ptr

// -----

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
