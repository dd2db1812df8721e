// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s
// TMA copies, transaction barriers, named barriers and setmaxnreg of a warp-specialized kernel.

// CHECK-LABEL: func.func @producer_consumer
// CHECK-SAME:  %{{.*}}: !tile.tensor_map<128x64xf16, swizzle 128>
// CHECK:       tile.prefetch_tensor_map %{{.*}} : !tile.tensor_map<128x64xf16, swizzle 128>
// CHECK-NEXT:  tile.mbarrier_init %{{.*}}[%{{.*}}] count 2 : memref<8xi64, 3 : i64>
// CHECK-NEXT:  tile.setmaxnreg dec 40
// CHECK-NEXT:  tile.mbarrier_wait %{{.*}}[%{{.*}}], %{{.*}} : memref<8xi64, 3 : i64>
// CHECK-NEXT:  tile.mbarrier_wait %{{.*}}[%{{.*}}], %{{.*}} wgmma_in_flight : memref<8xi64, 3 : i64>
// CHECK-NEXT:  tile.mbarrier_arrive %{{.*}}[%{{.*}}] expect_tx 16384 : memref<8xi64, 3 : i64>
// CHECK-NEXT:  tile.tma_load %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}] : !tile.tensor_map<128x64xf16, swizzle 128>, memref<4x128x64xf16, 3 : i64>, memref<8xi64, 3 : i64>
// CHECK-NEXT:  tile.setmaxnreg inc 232
// CHECK-NEXT:  tile.mbarrier_arrive %{{.*}}[%{{.*}}] : memref<8xi64, 3 : i64>
// CHECK-NEXT:  tile.named_barrier 1, 256
// CHECK-NEXT:  tile.named_barrier %{{.*}}, 128
// CHECK-NEXT:  tile.fence_proxy_async
// CHECK-NEXT:  tile.tma_store %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x128x64xf16, 3 : i64>, !tile.tensor_map<128x64xf16, swizzle 128>
// CHECK-NEXT:  tile.tma_store_commit
// CHECK-NEXT:  tile.tma_store_wait 0
func.func @producer_consumer(%map: !tile.tensor_map<128x64xf16, swizzle 128>,
                             %smem: memref<4x128x64xf16, 3>, %bars: memref<8xi64, 3>,
                             %s: index, %r: index, %c: index, %parity: i1, %id: i32) {
  %z = arith.constant 0 : index
  tile.prefetch_tensor_map %map : !tile.tensor_map<128x64xf16, swizzle 128>
  tile.mbarrier_init %bars[%s] count 2 : memref<8xi64, 3>
  tile.setmaxnreg dec 40
  tile.mbarrier_wait %bars[%s], %parity : memref<8xi64, 3>
  tile.mbarrier_wait %bars[%s], %parity wgmma_in_flight : memref<8xi64, 3>
  tile.mbarrier_arrive %bars[%s] expect_tx 16384 : memref<8xi64, 3>
  tile.tma_load %map[%r, %c], %smem[%s, %z, %z], %bars[%s] : !tile.tensor_map<128x64xf16, swizzle 128>, memref<4x128x64xf16, 3>, memref<8xi64, 3>
  tile.setmaxnreg inc 232
  tile.mbarrier_arrive %bars[%s] : memref<8xi64, 3>
  tile.named_barrier 1, 256
  tile.named_barrier %id, 128
  tile.fence_proxy_async
  tile.tma_store %smem[%s, %z, %z], %map[%r, %c] : memref<4x128x64xf16, 3>, !tile.tensor_map<128x64xf16, swizzle 128>
  tile.tma_store_commit
  tile.tma_store_wait 0
  func.return
}

// A box smaller than its buffer's outer dimension, unswizzled bf16 and f32 maps.
// CHECK-LABEL: func.func @boxes
// CHECK-SAME:  !tile.tensor_map<64x64xbf16, swizzle 128>, %{{.*}}: !tile.tensor_map<8x32xf32, swizzle 0>
func.func @boxes(%a: !tile.tensor_map<64x64xbf16, swizzle 128>, %f: !tile.tensor_map<8x32xf32, swizzle 0>,
                 %smem: memref<2x128x64xbf16, 3>, %out: memref<8x32xf32, 3>, %bars: memref<2xi64, 3>,
                 %i: index) {
  tile.tma_load %a[%i, %i], %smem[%i, %i, %i], %bars[%i] : !tile.tensor_map<64x64xbf16, swizzle 128>, memref<2x128x64xbf16, 3>, memref<2xi64, 3>
  tile.tma_store %out[%i, %i], %f[%i, %i] : memref<8x32xf32, 3>, !tile.tensor_map<8x32xf32, swizzle 0>
  func.return
}

// Clusters: a box multicast to both CTAs, an arrival on the peer CTA's barrier, the cluster
// barrier.
// CHECK-LABEL: func.func @cluster
// CHECK:       tile.tma_load %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}] multicast 3 : !tile.tensor_map<64x64xf16, swizzle 128>, memref<4x128x64xf16, 3 : i64>, memref<4xi64, 3 : i64>
// CHECK-NEXT:  tile.mbarrier_arrive %{{.*}}[%{{.*}}] cta %{{.*}} : memref<4xi64, 3 : i64>
// CHECK-NEXT:  tile.cluster_barrier
func.func @cluster(%b: !tile.tensor_map<64x64xf16, swizzle 128>, %smem: memref<4x128x64xf16, 3>,
                   %bars: memref<4xi64, 3>, %s: index, %r: index) {
  tile.tma_load %b[%r, %s], %smem[%s, %r, %s], %bars[%s] multicast 3 : !tile.tensor_map<64x64xf16, swizzle 128>, memref<4x128x64xf16, 3>, memref<4xi64, 3>
  tile.mbarrier_arrive %bars[%s] cta %r : memref<4xi64, 3>
  tile.cluster_barrier
  func.return
}

// A TMA-store epilogue's staging store: buffer indices, and `at` the output position.
// CHECK-LABEL: func.func @staging_store
// CHECK:       tile.store_acc %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] at [%{{.*}}, %{{.*}}] epilogue {
// CHECK:       } : !tile.frag<acc, f32, m16n8k16>, memref<2x4x64x64xf16, 3 : i64>
func.func @staging_store(%d: !tile.frag<acc, f32, m16n8k16>, %stage: memref<2x4x64x64xf16, 3>,
                         %g: index, %r: index, %row: index, %col: index) {
  tile.store_acc %d, %stage[%g, %g, %r, %r] at [%row, %col] epilogue {
  ^bb0(%v: f32, %i: index, %j: index):
    tile.yield %v : f32
  } : !tile.frag<acc, f32, m16n8k16>, memref<2x4x64x64xf16, 3>
  func.return
}

// An implicit GEMM's A rows: an im2col map's pixels at the filter offset (r, s).
// CHECK-LABEL: func.func @im2col_load
// CHECK:       tile.tma_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] im2col[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}] : !tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 16, 16, 64]>, memref<4x128x64xf16, 3 : i64>, memref<8xi64, 3 : i64>
func.func @im2col_load(%map: !tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 16, 16, 64]>,
                       %smem: memref<4x128x64xf16, 3>, %bars: memref<8xi64, 3>,
                       %n: index, %h: index, %w: index, %c: index, %r: index, %s: index) {
  %z = arith.constant 0 : index
  tile.tma_load %map[%n, %h, %w, %c] im2col [%r, %s], %smem[%z, %z, %z], %bars[%z] : !tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 16, 16, 64]>, memref<4x128x64xf16, 3>, memref<8xi64, 3>
  func.return
}

// An L2 prefetch of a box ahead of its load: no shared memory, no barrier.
// CHECK-LABEL: func.func @l2_prefetch
// CHECK:       tile.tma_prefetch %{{.*}}[%{{.*}}, %{{.*}}] : !tile.tensor_map<96x64xf16, swizzle 128>
func.func @l2_prefetch(%map: !tile.tensor_map<96x64xf16, swizzle 128>, %r: index, %c: index) {
  tile.tma_prefetch %map[%r, %c] : !tile.tensor_map<96x64xf16, swizzle 128>
  func.return
}
