// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s
// The tensor-core, async-copy, shuffle, conversion and approximate-math ops round-trip.

func.func @matrix_ops(%s: !llvm.ptr<3>, %g: !llvm.ptr<1>, %p: !llvm.ptr, %i: i32, %l: i64,
                      %f: f32, %h: vector<2xf16>) {
  // CHECK:      %{{.*}} = nvvm.ldmatrix %{{.*}} num 4 : !llvm.ptr<3> -> !llvm.struct<(i32, i32, i32, i32)>
  // CHECK-NEXT: %{{.*}} = nvvm.ldmatrix %{{.*}} num 2 trans : !llvm.ptr<3> -> !llvm.struct<(i32, i32)>
  // CHECK-NEXT: %{{.*}} = nvvm.ldmatrix %{{.*}} num 1 : !llvm.ptr<3> -> i32
  %0 = nvvm.ldmatrix %s num 4 : !llvm.ptr<3> -> !llvm.struct<(i32, i32, i32, i32)>
  %1 = nvvm.ldmatrix %s num 2 trans : !llvm.ptr<3> -> !llvm.struct<(i32, i32)>
  %2 = nvvm.ldmatrix %s num 1 : !llvm.ptr<3> -> i32

  // CHECK-NEXT: %{{.*}} = nvvm.mma.sync f16 A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] B[%{{.*}}, %{{.*}}] C[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>), (vector<2xf16>, vector<2xf16>)
  // CHECK-NEXT: %{{.*}} = nvvm.mma.sync bf16 A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] B[%{{.*}}, %{{.*}}] C[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : (i32, i32, i32, i32), (i32, i32)
  %3 = nvvm.mma.sync f16 A[%h, %h, %h, %h] B[%h, %h] C[%f, %f, %f, %f] : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>), (vector<2xf16>, vector<2xf16>)
  %4 = nvvm.mma.sync bf16 A[%i, %i, %i, %i] B[%i, %i] C[%f, %f, %f, %f] : (i32, i32, i32, i32), (i32, i32)

  // CHECK-NEXT: %{{.*}} = nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32
  // CHECK-NEXT: %{{.*}} = nvvm.shfl.sync up %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32
  %5 = nvvm.shfl.sync bfly %i, %f, %i, %i : f32
  %6 = nvvm.shfl.sync up %i, %i, %i, %i : i32

  // CHECK-NEXT: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
  // CHECK-NEXT: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr
  // CHECK-NEXT: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 8, cache = ca : !llvm.ptr<3>, !llvm.ptr<1>
  // CHECK-NEXT: nvvm.cp.async.commit.group
  // CHECK-NEXT: nvvm.cp.async.wait.group 1
  nvvm.cp.async.shared.global %s, %g, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
  nvvm.cp.async.shared.global %s, %p, 16, cache = cg, %i : !llvm.ptr<3>, !llvm.ptr
  nvvm.cp.async.shared.global %s, %g, 8, cache = ca : !llvm.ptr<3>, !llvm.ptr<1>
  nvvm.cp.async.commit.group
  nvvm.cp.async.wait.group 1

  // CHECK-NEXT: nvvm.wgmma.fence.aligned
  // CHECK-NEXT: %{{.*}} = nvvm.wgmma.mma_async bf16 n = 8 %{{.*}}, %{{.*}}, %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] -> !llvm.struct<(f32, f32, f32, f32)>
  // CHECK-NEXT: %{{.*}} = nvvm.wgmma.mma_async f16 n = 8 trans_b %{{.*}}, %{{.*}}, %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] -> !llvm.struct<(f32, f32, f32, f32)>
  // CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
  // CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
  nvvm.wgmma.fence.aligned
  %7 = nvvm.wgmma.mma_async bf16 n = 8 %l, %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32)>
  %nmajor = nvvm.wgmma.mma_async f16 n = 8 trans_b %l, %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32)>
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 0

  // CHECK-NEXT: %{{.*}} = nvvm.cvt.pack f16 %{{.*}}, %{{.*}}
  // CHECK-NEXT: %{{.*}} = nvvm.cvt.pack bf16 %{{.*}}, %{{.*}}
  // CHECK-NEXT: %{{.*}} = nvvm.tanh.approx.f32 %{{.*}}
  // CHECK-NEXT: %{{.*}} = nvvm.ex2.approx.ftz.f32 %{{.*}}
  // CHECK-NEXT: %{{.*}} = nvvm.barrier0.or %{{.*}}
  %8 = nvvm.cvt.pack f16 %f, %f
  %9 = nvvm.cvt.pack bf16 %f, %f
  %10 = nvvm.tanh.approx.f32 %f
  %11 = nvvm.ex2.approx.ftz.f32 %f
  %12 = nvvm.barrier0.or %i
  func.return
}
