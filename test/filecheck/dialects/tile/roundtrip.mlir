// RUN: tilesync-opt %s | filecheck %s
// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

// CHECK-LABEL: func.func @gemm_step
func.func @gemm_step(%A: memref<256x64xf16>, %C: memref<256x128xf16>, %bias: memref<128xf16>,
                     %sa: memref<3x128x32xf16, 3>, %sb: memref<3x32x128xf16, 3>,
                     %sbt: memref<3x128x32xbf16, 3>, %i: index, %j: index, %s: index) {
  %zero = arith.constant 0.0 : f32
  // CHECK: %[[Z:.*]] = tile.fill %{{.*}} : f32 -> !tile.frag<acc, f32, m16n8k16>
  %z = tile.fill %zero : f32 -> !tile.frag<acc, f32, m16n8k16>

  // CHECK: tile.cp_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] masked swizzle #tile.swizzle<2, 3, 3> : memref<3x128x32xf16, 3 : i64>, memref<256x64xf16>
  tile.cp_async %sa[%s, %i, %j], %A[%i, %j] masked swizzle #tile.swizzle<2, 3, 3> : memref<3x128x32xf16, 3>, memref<256x64xf16>
  // CHECK: tile.cp_async %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] : memref<3x128x32xf16, 3 : i64>, memref<256x64xf16>
  tile.cp_async %sa[%s, %i, %j], %A[%i, %j] : memref<3x128x32xf16, 3>, memref<256x64xf16>
  // CHECK: tile.copy_out %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] masked swizzle #tile.swizzle<2, 3, 3> : memref<256x128xf16>, memref<3x128x32xf16, 3 : i64>
  tile.copy_out %C[%i, %j], %sa[%s, %i, %j] masked swizzle #tile.swizzle<2, 3, 3> : memref<256x128xf16>, memref<3x128x32xf16, 3>
  // CHECK: tile.cp_async_commit
  tile.cp_async_commit
  // CHECK: tile.cp_async_wait 1
  tile.cp_async_wait 1

  // CHECK: %{{.*}} = tile.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] swizzle #tile.swizzle<2, 3, 3> : memref<3x128x32xf16, 3 : i64> -> !tile.frag<a, f16, m16n8k16>
  %a = tile.ldmatrix %sa[%s, %i, %j] swizzle #tile.swizzle<2, 3, 3> : memref<3x128x32xf16, 3> -> !tile.frag<a, f16, m16n8k16>
  // CHECK: %{{.*}}, %{{.*}} = tile.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] trans swizzle #tile.swizzle<3, 3, 4> : memref<3x32x128xf16, 3 : i64> -> !tile.frag<b, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>
  %b0, %b1 = tile.ldmatrix %sb[%s, %i, %j] trans swizzle #tile.swizzle<3, 3, 4> : memref<3x32x128xf16, 3> -> !tile.frag<b, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>
  // CHECK: %{{.*}} = tile.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<3x128x32xbf16, 3 : i64> -> !tile.frag<b, bf16, m16n8k16>
  %bb = tile.ldmatrix %sbt[%s, %i, %j] : memref<3x128x32xbf16, 3> -> !tile.frag<b, bf16, m16n8k16>

  // CHECK: %[[D:.*]] = tile.mma %{{.*}}, %{{.*}}, %[[Z]] : !tile.frag<a, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>, !tile.frag<acc, f32, m16n8k16> -> !tile.frag<acc, f32, m16n8k16>
  %d = tile.mma %a, %b0, %z : !tile.frag<a, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>, !tile.frag<acc, f32, m16n8k16> -> !tile.frag<acc, f32, m16n8k16>

  // CHECK: tile.store_acc %[[D]], %{{.*}}[%{{.*}}, %{{.*}}] : !tile.frag<acc, f32, m16n8k16>, memref<256x128xf16>
  tile.store_acc %d, %C[%i, %j] : !tile.frag<acc, f32, m16n8k16>, memref<256x128xf16>
  // CHECK: tile.store_acc %[[D]], %{{.*}}[%{{.*}}, %{{.*}}] masked epilogue {
  // CHECK-NEXT: ^{{.*}}(%[[V:[a-z0-9_]+]]: f32, %{{.*}}: index, %[[COL:[a-z0-9_]+]]: index):
  // CHECK-NEXT:   %[[B:.*]] = memref.load %{{.*}}[%[[COL]]] : memref<128xf16>
  // CHECK-NEXT:   %[[BF:.*]] = arith.extf %[[B]] : f16 to f32
  // CHECK-NEXT:   %[[R:.*]] = arith.addf %[[V]], %[[BF]] : f32
  // CHECK-NEXT:   tile.yield %[[R]] : f32
  // CHECK-NEXT: } : !tile.frag<acc, f32, m16n8k16>, memref<256x128xf16>
  tile.store_acc %d, %C[%i, %j] masked epilogue {
  ^bb0(%v: f32, %row: index, %col: index):
    %bv = memref.load %bias[%col] : memref<128xf16>
    %bf = arith.extf %bv : f16 to f32
    %r = arith.addf %v, %bf : f32
    tile.yield %r : f32
  } : !tile.frag<acc, f32, m16n8k16>, memref<256x128xf16>
  func.return
}

// Split-K, SwiGLU and warp-shuffle ops.
// CHECK-LABEL: func.func @split_k_swiglu
func.func @split_k_swiglu(%g: !tile.frag<acc, f32, m16n8k16>, %u: !tile.frag<acc, f32, m16n8k16>, %ws: memref<64x128xf32>, %part: memref<64x64xf32, 3>, %cnt: memref<1x2xi32>, %C: memref<64x64xf16>, %i: index, %j: index, %x: f32, %n: i32, %blocks: memref<4x16x8xf32>, %z: index) {
  // CHECK: tile.store_acc %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] masked reduce : !tile.frag<acc, f32, m16n8k16>, memref<64x128xf32>
  tile.store_acc %g, %ws[%i, %j] masked reduce : !tile.frag<acc, f32, m16n8k16>, memref<64x128xf32>
  // CHECK: %[[LAST:.*]] = tile.arrive %{{.*}}[%{{.*}}, %{{.*}}] of 4 : memref<1x2xi32>
  %last = tile.arrive %cnt[%i, %j] of 4 : memref<1x2xi32>
  // CHECK: %{{.*}} = tile.arrive %{{.*}}[%{{.*}}, %{{.*}}] by %{{.*}} of 44 threads 256 : memref<1x2xi32>
  %some = tile.arrive %cnt[%i, %j] by %j of 44 threads 256 : memref<1x2xi32>
  // CHECK: %{{.*}} = tile.take_acc %{{.*}}[%{{.*}}, %{{.*}}] masked : memref<64x128xf32> -> !tile.frag<acc, f32, m16n8k16>
  %t = tile.take_acc %ws[%i, %j] masked : memref<64x128xf32> -> !tile.frag<acc, f32, m16n8k16>
  // CHECK: %{{.*}} = tile.take_acc %{{.*}}[%{{.*}}, %{{.*}}] keep : memref<64x128xf32> -> !tile.frag<acc, f32, m16n8k16>
  %kept = tile.take_acc %ws[%i, %j] keep : memref<64x128xf32> -> !tile.frag<acc, f32, m16n8k16>
  // CHECK: tile.store_acc %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] packed : !tile.frag<acc, f32, m16n8k16>, memref<4x16x8xf32>
  tile.store_acc %g, %blocks[%i, %z, %z] packed : !tile.frag<acc, f32, m16n8k16>, memref<4x16x8xf32>
  // CHECK: %{{.*}} = tile.take_acc %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] keep packed : memref<4x16x8xf32> -> !tile.frag<acc, f32, m16n8k16>
  %unpacked = tile.take_acc %blocks[%i, %z, %z] keep packed : memref<4x16x8xf32> -> !tile.frag<acc, f32, m16n8k16>
  // CHECK: %[[PEER:.*]] = tile.take_acc %{{.*}}[%{{.*}}, %{{.*}}] cta %{{.*}} : memref<64x64xf32, 3 : i64> -> !tile.frag<acc, f32, m16n8k16>
  %peer = tile.take_acc %part[%i, %j] cta %i : memref<64x64xf32, 3> -> !tile.frag<acc, f32, m16n8k16>
  // CHECK: %{{.*}} = tile.add_acc %{{.*}}, %[[PEER]] : !tile.frag<acc, f32, m16n8k16>
  %sum = tile.add_acc %g, %peer : !tile.frag<acc, f32, m16n8k16>
  // CHECK: tile.store_acc %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] epilogue {
  // CHECK-NEXT: ^{{.*}}(%[[G:[a-z0-9_]+]]: f32, %[[U:[a-z0-9_]+]]: f32, %{{.*}}: index, %{{.*}}: index):
  // CHECK-NEXT:   %[[P:.*]] = arith.mulf %[[G]], %[[U]] : f32
  // CHECK-NEXT:   tile.yield %[[P]] : f32
  // CHECK-NEXT: } : !tile.frag<acc, f32, m16n8k16>, !tile.frag<acc, f32, m16n8k16>, memref<64x64xf16>
  tile.store_acc %g, %u, %C[%i, %j] epilogue {
  ^bb0(%a: f32, %b: f32, %row: index, %col: index):
    %p = arith.mulf %a, %b : f32
    tile.yield %p : f32
  } : !tile.frag<acc, f32, m16n8k16>, !tile.frag<acc, f32, m16n8k16>, memref<64x64xf16>
  // CHECK: %{{.*}} = tile.shuffle bfly %{{.*}}, 16 : f32
  // CHECK-NEXT: %{{.*}} = tile.shuffle down %{{.*}}, 1 : f32
  // CHECK-NEXT: %{{.*}} = tile.shuffle up %{{.*}}, 2 : i32
  // CHECK-NEXT: %{{.*}} = tile.shuffle idx %{{.*}}, 0 : i32
  %s = tile.shuffle bfly %x, 16 : f32
  %sd = tile.shuffle down %x, 1 : f32
  %su = tile.shuffle up %n, 2 : i32
  %si = tile.shuffle idx %su, 0 : i32
  func.return
}

// A read at L2 (the queue bench's unsynchronized ring).
// CHECK-LABEL: func.func @load_l2
func.func @load_l2(%ring: memref<?xi128>, %w: memref<8x4xi128, 1>, %i: index) -> (i128, i128) {
  // CHECK: %{{.*}} = tile.load_l2 %{{.*}}[%{{.*}}] : memref<?xi128> -> i128
  %v = tile.load_l2 %ring[%i] : memref<?xi128> -> i128
  // CHECK: %{{.*}} = tile.load_l2 %{{.*}}[%{{.*}}, %{{.*}}] : memref<8x4xi128, 1 : i64> -> i128
  %x = tile.load_l2 %w[%i, %i] : memref<8x4xi128, 1> -> i128
  func.return %v, %x : i128, i128
}
