// RUN: tilesync-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @ldmatrix_count(%s: !llvm.ptr<3>) {
  %0 = nvvm.ldmatrix %s num 3 : !llvm.ptr<3> -> !llvm.struct<(i32, i32, i32)>
  func.return
}
// CHECK: 'nvvm.ldmatrix' loads 1, 2 or 4 matrices, got 3

// -----

func.func @ldmatrix_global(%g: !llvm.ptr<1>) {
  %0 = nvvm.ldmatrix %g num 2 : !llvm.ptr<1> -> !llvm.struct<(i32, i32)>
  func.return
}
// CHECK: 'nvvm.ldmatrix' reads shared memory (!llvm.ptr<3>), got !llvm.ptr<1>

// -----

func.func @ldmatrix_result(%s: !llvm.ptr<3>) {
  %0 = nvvm.ldmatrix %s num 4 : !llvm.ptr<3> -> !llvm.struct<(i32, i32)>
  func.return
}
// CHECK: 'nvvm.ldmatrix' of 4 matrices yields !llvm.struct<(i32, i32, i32, i32)>, got !llvm.struct<(i32, i32)>

// -----

func.func @mma_counts(%h: vector<2xf16>, %f: f32) {
  %0 = nvvm.mma.sync f16 A[%h, %h] B[%h, %h] C[%f, %f, %f, %f] : (vector<2xf16>, vector<2xf16>), (vector<2xf16>, vector<2xf16>)
  func.return
}
// CHECK: 'nvvm.mma.sync' m16n8k16 takes 4 A, 2 B and 4 C registers, got 2, 2 and 4

// -----

func.func @mma_types(%i: i32, %f: f32) {
  %0 = nvvm.mma.sync f16 A[%i, %i, %i, %i] B[%i, %i] C[%f, %f, %f, %f] : (i32, i32, i32, i32), (i32, i32)
  func.return
}
// CHECK: 'nvvm.mma.sync' f16 operands are vector<2xf16>, got i32

// -----

func.func @shfl_type(%i: i32, %l: i64) {
  %0 = nvvm.shfl.sync bfly %i, %l, %i, %i : i64
  func.return
}
// CHECK: 'nvvm.shfl.sync' moves i32 or f32, got i64

// -----

func.func @cp_async_cg_size(%s: !llvm.ptr<3>, %g: !llvm.ptr<1>) {
  nvvm.cp.async.shared.global %s, %g, 8, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
  func.return
}
// CHECK: 'nvvm.cp.async.shared.global' cache = cg copies 16 bytes, got 8

// -----

func.func @cp_async_size(%s: !llvm.ptr<3>, %g: !llvm.ptr<1>) {
  nvvm.cp.async.shared.global %s, %g, 32, cache = ca : !llvm.ptr<3>, !llvm.ptr<1>
  func.return
}
// CHECK: 'nvvm.cp.async.shared.global' copies 4, 8 or 16 bytes, got 32

// -----

func.func @cp_async_dst(%g: !llvm.ptr<1>) {
  nvvm.cp.async.shared.global %g, %g, 16, cache = cg : !llvm.ptr<1>, !llvm.ptr<1>
  func.return
}
// CHECK: 'nvvm.cp.async.shared.global' writes shared memory (!llvm.ptr<3>), got !llvm.ptr<1>

// -----

func.func @cp_async_src(%s: !llvm.ptr<3>) {
  nvvm.cp.async.shared.global %s, %s, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<3>
  func.return
}
// CHECK: 'nvvm.cp.async.shared.global' reads global memory (!llvm.ptr<1> or generic), got !llvm.ptr<3>

// -----

func.func @wait_group() {
  nvvm.cp.async.wait.group 8
  func.return
}
// CHECK: 'nvvm.cp.async.wait.group' waits for 0..7 pending groups, got 8

// -----

func.func @wgmma_wait_group() {
  nvvm.wgmma.wait.group.sync.aligned 9
  func.return
}
// CHECK: 'nvvm.wgmma.wait.group.sync.aligned' waits for 0..7 pending groups, got 9

// -----

func.func @wgmma_n(%l: i64, %i: i32, %f: f32) {
  %0 = nvvm.wgmma.mma_async f16 n = 12 %l, %l, %i, [%f, %f, %f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32, f32, f32)>
  func.return
}
// CHECK: 'nvvm.wgmma.mma_async' N must be a multiple of 8 in 8..256, got 12

// -----

func.func @wgmma_registers(%l: i64, %i: i32, %f: f32) {
  %0 = nvvm.wgmma.mma_async f16 n = 16 %l, %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32)>
  func.return
}
// CHECK: 'nvvm.wgmma.mma_async' m64n16k16 takes 8 accumulator registers, got 4

// -----

func.func @wgmma_result(%l: i64, %i: i32, %f: f32) {
  %0 = nvvm.wgmma.mma_async f16 n = 8 %l, %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32)>
  func.return
}
// CHECK: 'nvvm.wgmma.mma_async' yields !llvm.struct<(f32, f32, f32, f32)>, got !llvm.struct<(f32, f32)>
