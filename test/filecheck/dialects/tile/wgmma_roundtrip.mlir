// RUN: tilesync-opt %s | filecheck %s
// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

// A k16 step of a warpgroup: N = 16 (two accumulators) from 128-byte K-major rows.
// CHECK-LABEL: func.func @wgmma_step
// CHECK:       tile.fence_proxy_async
// CHECK-NEXT:  tile.wgmma_fence
// CHECK-NEXT:  %{{.*}}, %{{.*}} = tile.wgmma %a[%s, %m, %k], %b[%s, %n, %k], %c0, %c1 : memref<3x128x64xf16, 3 : i64>, memref<3x16x64xf16, 3 : i64>, !tile.frag<acc, f32, m16n8k16>
// CHECK-NEXT:  tile.wgmma_commit
// CHECK-NEXT:  tile.wgmma_wait 1
// CHECK-NEXT:  tile.wgmma_wait 0
func.func @wgmma_step(%a: memref<3x128x64xf16, 3>, %b: memref<3x16x64xf16, 3>, %s: index,
                      %m: index, %n: index, %k: index, %c0: !tile.frag<acc, f32, m16n8k16>,
                      %c1: !tile.frag<acc, f32, m16n8k16>) -> !tile.frag<acc, f32, m16n8k16> {
  tile.fence_proxy_async
  tile.wgmma_fence
  %d0, %d1 = tile.wgmma %a[%s, %m, %k], %b[%s, %n, %k], %c0, %c1 : memref<3x128x64xf16, 3>, memref<3x16x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  tile.wgmma_commit
  tile.wgmma_wait 1
  tile.wgmma_wait 0
  func.return %d1 : !tile.frag<acc, f32, m16n8k16>
}

// B N-major (trans_b): N = 128 over two 64-column atoms of a [stages][N / 64][K][64] buffer.
// CHECK-LABEL: func.func @wgmma_b_n_major
// CHECK:       = tile.wgmma %a[%s, %m, %k], %b[%s, %z, %k, %z] trans_b, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c : memref<3x64x64xf16, 3 : i64>, memref<3x2x64x64xf16, 3 : i64>, !tile.frag<acc, f32, m16n8k16>
func.func @wgmma_b_n_major(%a: memref<3x64x64xf16, 3>, %b: memref<3x2x64x64xf16, 3>, %s: index,
                           %m: index, %k: index, %z: index,
                           %c: !tile.frag<acc, f32, m16n8k16>) -> !tile.frag<acc, f32, m16n8k16> {
  %d:16 = tile.wgmma %a[%s, %m, %k], %b[%s, %z, %k, %z] trans_b, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c : memref<3x64x64xf16, 3>, memref<3x2x64x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return %d#15 : !tile.frag<acc, f32, m16n8k16>
}
