// RUN: tilesync-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @ld_release(%p: !llvm.ptr<1>) {
  %0 = nvvm.ld release, gpu %p : !llvm.ptr<1> -> i32
  func.return
}
// CHECK: 'nvvm.ld' cannot have ordering 'release' (expected one of: weak, relaxed, acquire, volatile)

// -----

func.func @st_acquire(%p: !llvm.ptr<1>, %v: i32) {
  nvvm.st acquire, gpu %p, %v : !llvm.ptr<1>, i32
  func.return
}
// CHECK: 'nvvm.st' cannot have ordering 'acquire' (expected one of: weak, relaxed, release, volatile)

// -----

func.func @red_acquire(%p: !llvm.ptr<1>, %v: i32) {
  nvvm.red add acquire, gpu %p, %v : !llvm.ptr<1>, i32
  func.return
}
// CHECK: 'nvvm.red' cannot have ordering 'acquire' (expected one of: relaxed, release)

// -----

func.func @atom_weak(%p: !llvm.ptr<1>, %v: i32) {
  %0 = nvvm.atom add volatile, gpu %p, %v : !llvm.ptr<1>, i32
  func.return
}
// CHECK: 'nvvm.atom' cannot have ordering 'volatile' (expected one of: relaxed, acquire, release, acq_rel)

// -----

func.func @cas_sc(%p: !llvm.ptr<1>, %v: i32) {
  %0 = nvvm.atom.cas sc, gpu %p, %v, %v : !llvm.ptr<1>, i32
  func.return
}
// CHECK: 'nvvm.atom.cas' cannot have ordering 'sc' (expected one of: relaxed, acquire, release, acq_rel)

// -----

func.func @fence_relaxed() {
  nvvm.fence relaxed, gpu
  func.return
}
// CHECK: 'nvvm.fence' cannot have ordering 'relaxed' (expected one of: acq_rel, sc)

// -----

func.func @ld_acquire_no_scope(%p: !llvm.ptr<1>) {
  %0 = nvvm.ld acquire %p : !llvm.ptr<1> -> i32
  func.return
}
// CHECK: 'nvvm.ld' with ordering 'acquire' needs a scope

// -----

func.func @st_volatile_scope(%p: !llvm.ptr<1>, %v: i32) {
  nvvm.st volatile, gpu %p, %v : !llvm.ptr<1>, i32
  func.return
}
// CHECK: 'nvvm.st' with ordering 'volatile' takes no scope

// -----

func.func @ld_local(%p: !llvm.ptr<5>) {
  %0 = nvvm.ld weak %p : !llvm.ptr<5> -> i32
  func.return
}
// CHECK: 'nvvm.ld' pointer must be in address space 0 (generic), 1 (global) or 3 (shared), got 5

// -----

func.func @atom_const_space(%p: !llvm.ptr<4>, %v: i32) {
  %0 = nvvm.atom add relaxed, gpu %p, %v : !llvm.ptr<4>, i32
  func.return
}
// CHECK: 'nvvm.atom' pointer must be in address space 0 (generic), 1 (global) or 3 (shared), got 4

// -----

func.func @atom_inc_i64(%p: !llvm.ptr<1>, %v: i64) {
  %0 = nvvm.atom inc relaxed, gpu %p, %v : !llvm.ptr<1>, i64
  func.return
}
// CHECK: 'nvvm.atom' inc does not support type i64 (expected i32)

// -----

func.func @atom_max_f32(%p: !llvm.ptr<1>, %v: f32) {
  %0 = nvvm.atom max relaxed, gpu %p, %v : !llvm.ptr<1>, f32
  func.return
}
// CHECK: 'nvvm.atom' max does not support type f32 (expected i32, i64)

// -----

func.func @red_exch(%p: !llvm.ptr<1>, %v: i32) {
  nvvm.red exch relaxed, gpu %p, %v : !llvm.ptr<1>, i32
  func.return
}
// CHECK: 'nvvm.red' cannot be 'exch' (it has no result): use nvvm.atom

// -----

func.func @red_xor_f32(%p: !llvm.ptr<3>, %v: f32) {
  nvvm.red xor relaxed, cta %p, %v : !llvm.ptr<3>, f32
  func.return
}
// CHECK: 'nvvm.red' xor does not support type f32 (expected i32, i64)

// -----

func.func @atom_result_mismatch(%p: !llvm.ptr<1>, %v: i32) {
  %0 = "nvvm.atom"(%p, %v) <{kind = #nvvm<atomic_kind add>, ordering = #nvvm<mem_order relaxed>, scope = #nvvm<mem_scope gpu>}> : (!llvm.ptr<1>, i32) -> i64
  func.return
}
// CHECK: attribute i32 expected from variable 'T', but got i64

// -----

func.func @cas_f32(%p: !llvm.ptr<1>, %v: f32) {
  %0 = nvvm.atom.cas relaxed, gpu %p, %v, %v : !llvm.ptr<1>, f32
  func.return
}
// CHECK: Expected one of i32, i64, but got f32

// -----

func.func @ld_i16(%p: !llvm.ptr<1>) {
  %0 = nvvm.ld weak %p : !llvm.ptr<1> -> i16
  func.return
}
// CHECK: Expected one of f32, i32, i64, but got i16

// -----

func.func @sreg_wrong_type() {
  %0 = nvvm.read.ptx.sreg.tid.x : i64
  func.return
}
// CHECK: 'nvvm.read.ptx.sreg.tid.x' must return i32, got i64

// -----

func.func @globaltimer_i32() {
  %0 = nvvm.read.ptx.sreg.globaltimer : i32
  func.return
}
// CHECK: 'nvvm.read.ptx.sreg.globaltimer' must return i64, got i32

// -----

func.func @nanosleep_i64(%d: i64) {
  nvvm.nanosleep %d : i64
  func.return
}
// CHECK: Expected attribute i32 but got i64

// -----

func.func @ld_peer_global(%p: !llvm.ptr<1>, %r: i32) {
  %v = nvvm.ld weak %p cta %r : !llvm.ptr<1> -> f32
  func.return
}
// CHECK: 'nvvm.ld' pointer into a peer CTA must be in shared memory (!llvm.ptr<3>), got !llvm.ptr<1>
