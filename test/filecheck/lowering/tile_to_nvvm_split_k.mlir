// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s

// Split-K: each slice stores its partial sums in its own slice of the workspace (plain f32
// stores); tile.arrive is a barrier, thread 0's fence + atomic add (the last arrival resets the
// counter and fences), and a barrier that ORs thread 0's answer to every thread; sum_slices
// loads each element of every slice from L2 (ld.relaxed.gpu) and adds them in slice order.
// CHECK-LABEL: func.func @split_k
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK:       nvvm.barrier0
// CHECK-NEXT:  %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:  %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:  %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %[[ZERO]] : index
// CHECK-NEXT:  %[[MINE:.*]] = scf.if %[[FIRST]] -> (i32) {
// CHECK-NEXT:    nvvm.fence acq_rel, gpu
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[OLD:.*]] = nvvm.atom add relaxed, gpu %[[PTR:.*]], %[[ONE]] : !llvm.ptr<1>, i32
// CHECK-NEXT:    %[[BEFORE_LAST:.*]] = arith.constant 2 : i32
// CHECK-NEXT:    %[[LAST:.*]] = arith.cmpi eq, %[[OLD]], %[[BEFORE_LAST]] : i32
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
// Each of the lane's four elements: three slices loaded, the second and third added on.
// CHECK-COUNT-4: nvvm.ld relaxed, gpu %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NOT:   nvvm.atom
// CHECK:       llvm.fadd
// CHECK-NOT:   nvvm.atom
// CHECK:       func.return
func.func @split_k(%c: !tile.frag<acc, f32, m16n8k16>, %ws: memref<3x64x128xf32>, %cnt: memref<1x2xi32>, %s: index, %i: index, %j: index) -> !tile.frag<acc, f32, m16n8k16> {
  tile.store_acc %c, %ws[%s, %i, %j] : !tile.frag<acc, f32, m16n8k16>, memref<3x64x128xf32>
  %last = tile.arrive %cnt[%i, %j] of 3 : memref<1x2xi32>
  %t = tile.sum_slices %ws[%i, %j] : memref<3x64x128xf32> -> !tile.frag<acc, f32, m16n8k16>
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

// Shuffles and math outside epilogues (softmax rows).
// CHECK-LABEL: func.func @shuffle
// CHECK:       nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK:       nvvm.ex2.approx.ftz.f32
func.func @shuffle(%x: f32) -> f32 {
  %s = tile.shuffle bfly %x, 16 : f32
  %e = math.exp %s : f32
  func.return %e : f32
}

// Masked sum_slices: an element outside the slice is not touched and reads as 0.
// CHECK-LABEL: func.func @sum_masked
// CHECK:       %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK:       %[[V:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK-NEXT:    %[[A:.*]] = nvvm.ld relaxed, gpu %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NEXT:    %[[B:.*]] = nvvm.ld relaxed, gpu %{{.*}} : !llvm.ptr<1> -> f32
// CHECK-NEXT:    %[[SUM:.*]] = llvm.fadd %[[A]], %[[B]] : f32
// CHECK-NEXT:    scf.yield %[[SUM]] : f32
// CHECK-NEXT:  } else {
// CHECK-NEXT:    scf.yield %[[ZERO]] : f32
// CHECK-NEXT:  }
// CHECK-COUNT-3: scf.if %{{.*}} -> (f32)
func.func @sum_masked(%ws: memref<2x10x128xf32>, %i: index, %j: index) -> !tile.frag<acc, f32, m16n8k16> {
  %t = tile.sum_slices %ws[%i, %j] masked : memref<2x10x128xf32> -> !tile.frag<acc, f32, m16n8k16>
  func.return %t : !tile.frag<acc, f32, m16n8k16>
}
