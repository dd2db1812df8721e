// RUN: tilesync-opt %s -p convert-nvvm-to-llvm | filecheck %s
// The tensor-core, async-copy, shuffle, conversion and approximate-math ops: intrinsic calls
// (names that LLVM 22 lowers) and inline PTX (wgmma, cvt, approximate math), every PTX string
// from PTX_TEMPLATES. The PTX of each: test/python/dialects/test_nvvm_ptx.py.


func.func @matrix_ops(%s: !llvm.ptr<3>, %g: !llvm.ptr<1>, %p: !llvm.ptr, %i: i32, %l: i64,
                      %f: f32, %h: vector<2xf16>) {
  %0 = nvvm.ldmatrix %s num 4 : !llvm.ptr<3> -> !llvm.struct<(i32, i32, i32, i32)>
  %1 = nvvm.ldmatrix %s num 2 trans : !llvm.ptr<3> -> !llvm.struct<(i32, i32)>
  %2 = nvvm.ldmatrix %s num 1 : !llvm.ptr<3> -> i32

  %3 = nvvm.mma.sync f16 A[%h, %h, %h, %h] B[%h, %h] C[%f, %f, %f, %f] : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>), (vector<2xf16>, vector<2xf16>)
  %4 = nvvm.mma.sync bf16 A[%i, %i, %i, %i] B[%i, %i] C[%f, %f, %f, %f] : (i32, i32, i32, i32), (i32, i32)

  %5 = nvvm.shfl.sync bfly %i, %f, %i, %i : f32
  %6 = nvvm.shfl.sync up %i, %i, %i, %i : i32

  nvvm.cp.async.shared.global %s, %g, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
  nvvm.cp.async.shared.global %s, %p, 16, cache = cg, %i : !llvm.ptr<3>, !llvm.ptr
  nvvm.cp.async.shared.global %s, %g, 8, cache = ca : !llvm.ptr<3>, !llvm.ptr<1>
  nvvm.cp.async.commit.group
  nvvm.cp.async.wait.group 1

  nvvm.wgmma.fence.aligned
  %7 = nvvm.wgmma.mma_async bf16 n = 8 %l, %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32)>
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 0

  %8 = nvvm.cvt.pack f16 %f, %f
  %9 = nvvm.cvt.pack bf16 %f, %f
  %10 = nvvm.tanh.approx.f32 %f
  %11 = nvvm.ex2.approx.ftz.f32 %f
  %12 = nvvm.barrier0.or %i
  %13 = nvvm.rsqrt.approx.f32 %f
  func.return
}
// CHECK: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16"(%s) : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16"(%s) : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x1.b16"(%s) : (!llvm.ptr<3>) -> i32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"(%h, %h, %h, %h, %h, %h, %f, %f, %f, %f) : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.bf16"(%i, %i, %i, %i, %i, %i, %f, %f, %f, %f) : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"(%i, %f, %i, %i) : (i32, f32, i32, i32) -> f32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.shfl.sync.up.i32"(%i, %i, %i, %i) : (i32, i32, i32, i32) -> i32
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16"(%s, %g) : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16.s"(%s, %p, %i) : (!llvm.ptr<3>, !llvm.ptr, i32) -> ()
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.cp.async.ca.shared.global.8"(%s, %g) : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.cp.async.commit.group"() : () -> ()
// CHECK-NEXT: %{{.*}} = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.cp.async.wait.group"(%{{.*}}) : (i32) -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;", "~{memory}" : () -> ()
// CHECK-NEXT: %{{.*}} = llvm.inline_asm has_side_effects "{{[{]}}\0A.reg .pred p;\0Asetp.ne.b32 p, $6, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $4, $5, p, 1, 1, 0, 0;\0A{{[}]}}", "=f,=f,=f,=f,l,l,r,0,1,2,3" %l, %l, %i, %f, %f, %f, %f : (i64, i64, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT: llvm.inline_asm has_side_effects "wgmma.commit_group.sync.aligned;", "~{memory}" : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 0;", "~{memory}" : () -> ()
// CHECK-NEXT: %{{.*}} = llvm.inline_asm "cvt.rn.f16x2.f32 $0, $1, $2;", "=r,f,f" %f, %f : (f32, f32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f" %f, %f : (f32, f32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm "tanh.approx.f32 $0, $1;", "=f,f" %f : (f32) -> f32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm "ex2.approx.ftz.f32 $0, $1;", "=f,f" %f : (f32) -> f32
// CHECK-NEXT: %{{.*}} = llvm.call_intrinsic "llvm.nvvm.barrier0.or"(%i) : (i32) -> i32
// CHECK-NEXT: %{{.*}} = llvm.inline_asm "rsqrt.approx.f32 $0, $1;", "=f,f" %f : (f32) -> f32
// CHECK-NEXT: func.return
// CHECK-NOT: nvvm.
