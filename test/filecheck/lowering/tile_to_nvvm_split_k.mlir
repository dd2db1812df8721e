// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s

// Split-K: store_acc reduce adds each element with red.relaxed.gpu (nvvm.red); tile.arrive is a
// barrier, thread 0's fence + atomic add (the last arrival resets the counter and fences), and a
// barrier that ORs thread 0's answer to every thread; take_acc exchanges each element with 0.
// CHECK-LABEL: func.func @split_k
// CHECK-COUNT-4: nvvm.red add relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, f32
// CHECK:       nvvm.barrier0
// CHECK-NEXT:  %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:  %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:  %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %[[ZERO]] : index
// CHECK-NEXT:  %[[MINE:.*]] = scf.if %[[FIRST]] -> (i32) {
// CHECK-NEXT:    nvvm.fence acq_rel, gpu
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[OLD:.*]] = nvvm.atom add relaxed, gpu %[[PTR:.*]], %[[ONE]] : !llvm.ptr<1>, i32
// CHECK-NEXT:    %[[THREE:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[LAST:.*]] = arith.cmpi eq, %[[OLD]], %[[THREE]] : i32
// CHECK-NEXT:    scf.if %[[LAST]] {
// CHECK-NEXT:      %[[RESET:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      nvvm.st relaxed, gpu %[[PTR]], %[[RESET]] : !llvm.ptr<1>, i32
// CHECK-NEXT:      nvvm.fence acq_rel, gpu
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[FLAG:.*]] = arith.extui %[[LAST]] : i1 to i32
// CHECK-NEXT:    scf.yield %[[FLAG]] : i32
// CHECK-NEXT:  } else {
// CHECK-NEXT:    %[[NONE:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    scf.yield %[[NONE]] : i32
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[ANY:.*]] = nvvm.barrier0.or %[[MINE]]
// CHECK-COUNT-4: nvvm.atom exch relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, f32
func.func @split_k(%c: !tile.frag<acc, f32, m16n8k16>, %ws: memref<64x128xf32>, %cnt: memref<1x2xi32>, %i: index, %j: index) -> !tile.frag<acc, f32, m16n8k16> {
  tile.store_acc %c, %ws[%i, %j] reduce : !tile.frag<acc, f32, m16n8k16>, memref<64x128xf32>
  %last = tile.arrive %cnt[%i, %j] of 4 : memref<1x2xi32>
  %t = tile.take_acc %ws[%i, %j] : memref<64x128xf32> -> !tile.frag<acc, f32, m16n8k16>
  func.return %t : !tile.frag<acc, f32, m16n8k16>
}

// A stream-K segment's arrival: its consumer threads meet on named barrier 1, thread 0 adds the
// segment's k-tiles, the arrival whose add reaches N is the last, and a named barrier-or of the
// same threads hands the answer over (the producer warp takes no part).
// CHECK-LABEL: func.func @stream_k_arrival
// CHECK:       %[[AMOUNT:.*]] = llvm.trunc %{{.*}} : i64 to i32
// CHECK:       nvvm.barrier.sync 1, 256
// CHECK:       %[[MINE:.*]] = scf.if %{{.*}} -> (i32) {
// CHECK-NEXT:    nvvm.fence acq_rel, gpu
// CHECK-NEXT:    %[[OLD:.*]] = nvvm.atom add relaxed, gpu %[[PTR:.*]], %[[AMOUNT]] : !llvm.ptr<1>, i32
// CHECK-NEXT:    %[[REACHED:.*]] = arith.addi %[[OLD]], %[[AMOUNT]] : i32
// CHECK-NEXT:    %[[N:.*]] = arith.constant 44 : i32
// CHECK-NEXT:    %[[LAST:.*]] = arith.cmpi eq, %[[REACHED]], %[[N]] : i32
// CHECK-NEXT:    scf.if %[[LAST]] {
// CHECK-NEXT:      %[[RESET:.*]] = arith.constant 0 : i32
// CHECK-NEXT:      nvvm.st relaxed, gpu %[[PTR]], %[[RESET]] : !llvm.ptr<1>, i32
// CHECK-NEXT:      nvvm.fence acq_rel, gpu
// CHECK-NEXT:    }
// CHECK:       %[[ANY:.*]] = nvvm.barrier.red.or 1, 256, %[[MINE]]
// CHECK-NOT:   nvvm.barrier0
func.func @stream_k_arrival(%cnt: memref<3xi32>, %t: index, %k: index) -> i1 {
  %last = tile.arrive %cnt[%t] by %k of 44 threads 256 : memref<3xi32>
  func.return %last : i1
}

// A stream-K partial read back with `keep`: plain relaxed gpu-scope loads, the slot left as is.
// CHECK-LABEL: func.func @take_kept
// CHECK-COUNT-4: nvvm.ld relaxed, gpu %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NOT:   nvvm.atom
func.func @take_kept(%ws: memref<64x128xf32>, %i: index, %j: index) -> !tile.frag<acc, f32, m16n8k16> {
  %t = tile.take_acc %ws[%i, %j] keep : memref<64x128xf32> -> !tile.frag<acc, f32, m16n8k16>
  func.return %t : !tile.frag<acc, f32, m16n8k16>
}

// SwiGLU: the epilogue sees the same element of both accumulators.
// CHECK-LABEL: func.func @swiglu
// CHECK:       %[[G0:.*]] = llvm.extractvalue %{{.*}}[0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK:       %[[U0:.*]] = llvm.extractvalue %{{.*}}[0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK:       arith.mulf %[[G0]], %[[U0]] : f32
func.func @swiglu(%g: !tile.frag<acc, f32, m16n8k16>, %u: !tile.frag<acc, f32, m16n8k16>, %C: memref<64x64xf16>, %i: index, %j: index) {
  tile.store_acc %g, %u, %C[%i, %j] epilogue {
  ^bb0(%a: f32, %b: f32, %row: index, %col: index):
    %p = arith.mulf %a, %b : f32
    tile.yield %p : f32
  } : !tile.frag<acc, f32, m16n8k16>, !tile.frag<acc, f32, m16n8k16>, memref<64x64xf16>
  func.return
}

// Shuffles and math outside epilogues (softmax and layer-norm rows).
// CHECK-LABEL: func.func @shuffle
// CHECK:       nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK:       %[[E:.*]] = nvvm.ex2.approx.ftz.f32
// CHECK:       %[[R:.*]] = nvvm.rsqrt.approx.f32 %[[E]]
// CHECK:       func.return %[[R]] : f32
func.func @shuffle(%x: f32) -> f32 {
  %s = tile.shuffle bfly %x, 16 : f32
  %e = math.exp %s : f32
  %r = math.rsqrt %e : f32
  func.return %r : f32
}

// Masked take_acc: an element outside the memref is not touched and reads as 0.
// CHECK-LABEL: func.func @take_masked
// CHECK:       %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK:       %[[V:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK-NEXT:    %[[OLD:.*]] = nvvm.atom exch relaxed, gpu %{{.*}}, %[[ZERO]] : !llvm.ptr<1>, f32
// CHECK-NEXT:    scf.yield %[[OLD]] : f32
// CHECK-NEXT:  } else {
// CHECK-NEXT:    scf.yield %[[ZERO]] : f32
// CHECK-NEXT:  }
// CHECK-COUNT-3: scf.if %{{.*}} -> (f32)
func.func @take_masked(%ws: memref<10x128xf32>, %i: index, %j: index) -> !tile.frag<acc, f32, m16n8k16> {
  %t = tile.take_acc %ws[%i, %j] masked : memref<10x128xf32> -> !tile.frag<acc, f32, m16n8k16>
  func.return %t : !tile.frag<acc, f32, m16n8k16>
}

// A stream-K partial tile in its packed workspace: value k of the lane at element 32 k + lane of
// the fragment's (16, 8) block, each store and load one element a lane of a contiguous 128-byte
// warp access (the block's base plus the lane, then +32, +64, +96 elements); the loads keep the
// values (ld.relaxed.gpu), no exchange.
// CHECK-LABEL: func.func @packed_partial
// CHECK:       %[[LANE:.*]] = nvvm.read.ptx.sreg.laneid
// CHECK:       %[[LANE64:.*]] = llvm.zext %[[LANE]] : i32 to i64
// CHECK:       %[[BLOCK:.*]] = llvm.mul %{{.*}}, %{{.*}} : i64
// CHECK:       %[[AT:.*]] = llvm.add %{{.*}}, %[[LANE64]] : i64
// CHECK:       %[[P0:.*]] = llvm.getelementptr inbounds %{{.*}}[%[[AT]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK:       %[[AT1:.*]] = llvm.add %[[AT]], %{{.*}} : i64
// CHECK:       llvm.store %{{.*}}, %[[P0]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-COUNT-3: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-COUNT-4: nvvm.ld relaxed, gpu %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NOT:   nvvm.atom exch
func.func @packed_partial(%c: !tile.frag<acc, f32, m16n8k16>, %ws: memref<8x16x8xf32>, %f: index) -> !tile.frag<acc, f32, m16n8k16> {
  %z = arith.constant 0 : index
  tile.store_acc %c, %ws[%f, %z, %z] packed : !tile.frag<acc, f32, m16n8k16>, memref<8x16x8xf32>
  %t = tile.take_acc %ws[%f, %z, %z] keep packed : memref<8x16x8xf32> -> !tile.frag<acc, f32, m16n8k16>
  func.return %t : !tile.frag<acc, f32, m16n8k16>
}
