// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=PTX

// A bulk load lands at the address of smem[0] from the global element g[at] (an i64 offset)
// and completes on bars[0]; a bulk store goes the other way in a bulk group, whose writes
// `tma_store_wait 0 writes` waits for (no `.read`); the proxy fences name their state space.
// CHECK-LABEL: func.func @bulk
// CHECK:       nvvm.fence.proxy.async global
// CHECK-NEXT:  %[[BAR:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i64
// CHECK-NEXT:  nvvm.mbarrier.arrive %[[BAR]] expect_tx %[[SIZE:.*]] : !llvm.ptr<3>
// CHECK:       %[[DST:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i128
// CHECK:       %[[SRC:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i128
// CHECK-NEXT:  nvvm.cp.async.bulk.shared.global %[[DST]], %[[SRC]], %[[SIZE]], %[[BAR]] : !llvm.ptr<3>, !llvm.ptr<1>, !llvm.ptr<3>
// CHECK-NEXT:  nvvm.fence.proxy.async "shared::cta"
// CHECK:       nvvm.cp.async.bulk.global.shared %{{.*}}, %[[DST]], %[[SIZE]] : !llvm.ptr<1>, !llvm.ptr<3>
// CHECK-NEXT:  nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:  nvvm.cp.async.bulk.wait.group 0
// CHECK-NEXT:  nvvm.fence.proxy.async global
// CHECK-NEXT:  nvvm.cp.async.bulk.wait.group.read 1
// CHECK-NOT:   tile.
// PTX:         "fence.proxy.async.global;", "~{memory}"
// PTX:         "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "l,r,~{memory}"
// PTX:         "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];", "l,l,r,l,~{memory}"
// PTX:         "fence.proxy.async.shared::cta;", "~{memory}"
// PTX:         "cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;", "l,l,r,~{memory}"
// PTX:         "cp.async.bulk.commit_group;", "~{memory}"
// PTX:         "cp.async.bulk.wait_group 0;", "~{memory}"
// PTX:         "fence.proxy.async.global;", "~{memory}"
// PTX:         "cp.async.bulk.wait_group.read 1;", "~{memory}"
func.func @bulk(%g: memref<?xi128>, %smem: memref<1024xi128, 3>, %bars: memref<1xi64, 3>,
                %at: index) {
  %z = arith.constant 0 : index
  tile.fence_proxy_async global
  tile.mbarrier_arrive %bars[%z] expect_tx 16384 : memref<1xi64, 3>
  tile.bulk_load %smem[%z], %g[%at], %bars[%z] bytes 16384 : memref<1024xi128, 3>, memref<?xi128>, memref<1xi64, 3>
  tile.fence_proxy_async
  tile.bulk_store %g[%at], %smem[%z] bytes 16384 : memref<?xi128>, memref<1024xi128, 3>
  tile.tma_store_commit
  tile.tma_store_wait 0 writes
  tile.fence_proxy_async global
  tile.tma_store_wait 1
  func.return
}
