// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s
// Hopper's transaction barriers, bulk tensor copies, named barriers and setmaxnreg round-trip.

func.func @tma_ops(%s: !llvm.ptr<3>, %b: !llvm.ptr<3>, %map: !llvm.ptr, %i: i32, %mask: i16) {
  // CHECK:      nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>
  // CHECK-NEXT: nvvm.fence.mbarrier_init
  // CHECK-NEXT: nvvm.mbarrier.arrive %{{.*}} expect_tx %{{.*}} : !llvm.ptr<3>
  // CHECK-NEXT: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
  // CHECK-NEXT: %{{.*}} = nvvm.mbarrier.try_wait.parity %{{.*}}, %{{.*}} : !llvm.ptr<3>
  // CHECK-NEXT: nvvm.mbarrier.arrive %{{.*}} cta %{{.*}} : !llvm.ptr<3>
  // CHECK-NEXT: nvvm.mbarrier.arrive %{{.*}} cta %{{.*}} release_cluster : !llvm.ptr<3>
  // CHECK-NEXT: %{{.*}} = nvvm.mbarrier.try_wait.parity %{{.*}}, %{{.*}} acquire_cluster : !llvm.ptr<3>
  // CHECK-NEXT: %{{.*}} = nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
  // CHECK-NEXT: nvvm.bar.warp.sync %{{.*}} : i32
  nvvm.mbarrier.init %b, %i : !llvm.ptr<3>
  nvvm.fence.mbarrier_init
  nvvm.mbarrier.arrive %b expect_tx %i : !llvm.ptr<3>
  nvvm.mbarrier.arrive %b : !llvm.ptr<3>
  %done = nvvm.mbarrier.try_wait.parity %b, %i : !llvm.ptr<3>
  nvvm.mbarrier.arrive %b cta %i : !llvm.ptr<3>
  nvvm.mbarrier.arrive %b cta %i release_cluster : !llvm.ptr<3>
  %seen = nvvm.mbarrier.try_wait.parity %b, %i acquire_cluster : !llvm.ptr<3>
  %peer = nvvm.mapa %b, %i : !llvm.ptr<3> -> !llvm.ptr<7>
  nvvm.bar.warp.sync %i : i32

  // CHECK-NEXT: nvvm.prefetch.tensormap %{{.*}} : !llvm.ptr
  // CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.global %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
  // CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.global %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} multicast %{{.*}} : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
  // CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.global %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] im2col[%{{.*}}, %{{.*}}], %{{.*}} : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
  // CHECK-NEXT: nvvm.cp.async.bulk.tensor.global.shared %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} : !llvm.ptr, !llvm.ptr<3>
  // CHECK-NEXT: nvvm.cp.async.bulk.commit.group
  // CHECK-NEXT: nvvm.cp.async.bulk.wait.group.read 1
  // CHECK-NEXT: nvvm.cp.async.bulk.wait.group 0
  // CHECK-NEXT: nvvm.cp.async.bulk.prefetch.tensor.l2.global %{{.*}}[%{{.*}}, %{{.*}}] : !llvm.ptr
  nvvm.prefetch.tensormap %map : !llvm.ptr
  nvvm.cp.async.bulk.tensor.shared.global %s, %map[%i, %done], %b : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
  nvvm.cp.async.bulk.tensor.shared.global %s, %map[%i, %i], %b multicast %mask : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
  nvvm.cp.async.bulk.tensor.shared.global %s, %map[%i, %i, %i, %i] im2col [%mask, %mask], %b : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
  nvvm.cp.async.bulk.tensor.global.shared %map[%i, %i, %i], %s : !llvm.ptr, !llvm.ptr<3>
  nvvm.cp.async.bulk.commit.group
  nvvm.cp.async.bulk.wait.group.read 1
  nvvm.cp.async.bulk.wait.group 0
  nvvm.cp.async.bulk.prefetch.tensor.l2.global %map[%i, %i] : !llvm.ptr

  // CHECK-NEXT: nvvm.barrier.sync 1, 256
  // CHECK-NEXT: nvvm.barrier.sync %{{.*}}, 128
  // CHECK-NEXT: %{{.*}} = nvvm.barrier.red.or 1, 256, %{{.*}}
  // CHECK-NEXT: nvvm.setmaxnreg inc 232
  // CHECK-NEXT: nvvm.setmaxnreg dec 40
  // CHECK-NEXT: nvvm.cluster.arrive
  // CHECK-NEXT: nvvm.cluster.wait
  nvvm.barrier.sync 1, 256
  nvvm.barrier.sync %i, 128
  %any = nvvm.barrier.red.or 1, 256, %i
  nvvm.setmaxnreg inc 232
  nvvm.setmaxnreg dec 40
  nvvm.cluster.arrive
  nvvm.cluster.wait
  func.return
}

// The 1-D bulk copies: shared <- global on a barrier, global <- shared in bulk groups.
// CHECK-LABEL: func.func @bulk_ops
// CHECK:      nvvm.cp.async.bulk.shared.global %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, !llvm.ptr<3>
// CHECK-NEXT: nvvm.cp.async.bulk.global.shared %{{.*}}, %{{.*}}, %{{.*}} : !llvm.ptr<1>, !llvm.ptr<3>
func.func @bulk_ops(%s: !llvm.ptr<3>, %b: !llvm.ptr<3>, %g: !llvm.ptr<1>, %n: i32) {
  nvvm.cp.async.bulk.shared.global %s, %g, %n, %b : !llvm.ptr<3>, !llvm.ptr<1>, !llvm.ptr<3>
  nvvm.cp.async.bulk.global.shared %g, %s, %n : !llvm.ptr<1>, !llvm.ptr<3>
  func.return
}
