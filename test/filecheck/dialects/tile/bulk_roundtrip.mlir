// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s
// 1-D bulk copies between a global memref and shared memory, their barrier and bulk group,
// the waits for their writes and the proxy fence of global memory.

// CHECK-LABEL: func.func @bulk
// CHECK:       tile.fence_proxy_async global
// CHECK-NEXT:  tile.mbarrier_arrive %{{.*}}[%{{.*}}] expect_tx 16384 : memref<1xi64, 3 : i64>
// CHECK-NEXT:  tile.bulk_load %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] bytes 16384 : memref<1024xi128, 3 : i64>, memref<?xi128>, memref<1xi64, 3 : i64>
// CHECK-NEXT:  tile.fence_proxy_async{{$}}
// CHECK-NEXT:  tile.bulk_store %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] bytes 16384 : memref<?xi128>, memref<1024xi128, 3 : i64>
// CHECK-NEXT:  tile.tma_store_commit
// CHECK-NEXT:  tile.tma_store_wait 0 writes
// CHECK-NEXT:  tile.tma_store_wait 1{{$}}
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
  tile.tma_store_wait 1
  func.return
}
