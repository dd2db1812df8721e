// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=NVVM

// Fragments become the register structs of the intrinsics, also in signatures and loops. The
// registers of an A/B fragment are unpacked once, next to its definition (here: the entry),
// not in the loop; the accumulator is unpacked where it is used.
// CHECK-LABEL: func.func @mma_loop(%{{.*}}: !llvm.struct<(i32, i32, i32, i32)>, %{{.*}}: !llvm.struct<(i32, i32)>, %{{.*}}: index) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-6: llvm.bitcast %{{.*}} : i32 to vector<2xf16>
// CHECK:         %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:    %[[Z0:.*]] = llvm.insertvalue %{{.*}}, %[[U]][0]
// CHECK-NEXT:    %[[Z1:.*]] = llvm.insertvalue %{{.*}}, %[[Z0]][1]
// CHECK-NEXT:    %[[Z2:.*]] = llvm.insertvalue %{{.*}}, %[[Z1]][2]
// CHECK-NEXT:    %[[Z:.*]] = llvm.insertvalue %{{.*}}, %[[Z2]][3]
// CHECK-NEXT:    %{{.*}} = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[Z]]) -> (!llvm.struct<(f32, f32, f32, f32)>) {
// CHECK-NEXT:      llvm.extractvalue %[[ACC]][0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:      llvm.extractvalue %[[ACC]][1] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:      llvm.extractvalue %[[ACC]][2] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:      llvm.extractvalue %[[ACC]][3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:      %[[D:.*]] = nvvm.mma.sync f16 A[{{.*}}] B[{{.*}}] C[{{.*}}] : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>), (vector<2xf16>, vector<2xf16>)
// CHECK-NEXT:      scf.yield %[[D]] : !llvm.struct<(f32, f32, f32, f32)>
func.func @mma_loop(%a: !tile.frag<a, f16, m16n8k16>, %b: !tile.frag<b, f16, m16n8k16>, %n: index) -> !tile.frag<acc, f32, m16n8k16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %z = tile.fill %zero : f32 -> !tile.frag<acc, f32, m16n8k16>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (!tile.frag<acc, f32, m16n8k16>) {
    %d = tile.mma %a, %b, %acc : !tile.frag<a, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>, !tile.frag<acc, f32, m16n8k16> -> !tile.frag<acc, f32, m16n8k16>
    scf.yield %d : !tile.frag<acc, f32, m16n8k16>
  }
  func.return %r : !tile.frag<acc, f32, m16n8k16>
}

// bf16 operands stay packed in i32.
// CHECK-LABEL: func.func @mma_bf16
// CHECK-NOT:   llvm.bitcast
// CHECK:       nvvm.mma.sync bf16 A[{{.*}}] B[{{.*}}] C[{{.*}}] : (i32, i32, i32, i32), (i32, i32)
func.func @mma_bf16(%a: !tile.frag<a, bf16, m16n8k16>, %b: !tile.frag<b, bf16, m16n8k16>, %c: !tile.frag<acc, f32, m16n8k16>) -> !tile.frag<acc, f32, m16n8k16> {
  %d = tile.mma %a, %b, %c : !tile.frag<a, bf16, m16n8k16>, !tile.frag<b, bf16, m16n8k16>, !tile.frag<acc, f32, m16n8k16> -> !tile.frag<acc, f32, m16n8k16>
  func.return %d : !tile.frag<acc, f32, m16n8k16>
}

// ldmatrix: lane l addresses row l & 15 and column (l >> 1) & 8 of the A block (lane values
// computed once at the function entry); the row-major offset is swizzled: o ^ ((o >> 3) & 24).
// CHECK-LABEL: func.func @ldmatrix_a
// CHECK:       %[[L:.*]] = nvvm.read.ptx.sreg.laneid : i32
// CHECK-NEXT:  %[[F:.*]] = llvm.mlir.constant(15 : i32) : i32
// CHECK-NEXT:  %[[ROW:.*]] = llvm.and %[[L]], %[[F]] : i32
// CHECK-NEXT:  %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:  %[[SH:.*]] = llvm.lshr %[[L]], %[[ONE]] : i32
// CHECK-NEXT:  %[[EIGHT:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK-NEXT:  %[[B4:.*]] = llvm.and %[[SH]], %[[EIGHT]] : i32
// CHECK:       %[[THREE:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT:  %[[MASK:.*]] = llvm.mlir.constant(24 : i32) : i32
// CHECK-NEXT:  llvm.add %{{.*}}, %[[ROW]] : i32
// CHECK-NEXT:  llvm.add %{{.*}}, %[[B4]] : i32
// CHECK:       %[[S:.*]] = llvm.lshr %[[O:[0-9]+]], %[[THREE]] : i32
// CHECK-NEXT:  %[[M:.*]] = llvm.and %[[S]], %[[MASK]] : i32
// CHECK-NEXT:  %[[X:.*]] = llvm.xor %[[O]], %[[M]] : i32
// CHECK-NEXT:  %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%[[X]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f16
// CHECK-NEXT:  %{{.*}} = nvvm.ldmatrix %[[P]] num 4 : !llvm.ptr<3> -> !llvm.struct<(i32, i32, i32, i32)>
func.func @ldmatrix_a(%s: memref<2x64x32xf16, 3>, %i: index, %j: index) -> !tile.frag<a, f16, m16n8k16> {
  %a = tile.ldmatrix %s[%i, %i, %j] swizzle #tile.swizzle<2, 3, 3> : memref<2x64x32xf16, 3> -> !tile.frag<a, f16, m16n8k16>
  func.return %a : !tile.frag<a, f16, m16n8k16>
}

// Two B fragments from one x4.trans load: registers 0-1 and 2-3.
// CHECK-LABEL: func.func @ldmatrix_b_pair
// CHECK:       %[[R:.*]] = nvvm.ldmatrix %{{.*}} num 4 trans
// CHECK-NEXT:  %[[R0:.*]] = llvm.extractvalue %[[R]][0]
// CHECK-NEXT:  %[[R1:.*]] = llvm.extractvalue %[[R]][1]
// CHECK-NEXT:  %[[R2:.*]] = llvm.extractvalue %[[R]][2]
// CHECK-NEXT:  %[[R3:.*]] = llvm.extractvalue %[[R]][3]
// CHECK-NEXT:  %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(i32, i32)>
// CHECK-NEXT:  %[[H0:.*]] = llvm.insertvalue %[[R0]], %[[U]][0]
// CHECK-NEXT:  %[[F0:.*]] = llvm.insertvalue %[[R1]], %[[H0]][1]
// CHECK-NEXT:  %[[H1:.*]] = llvm.insertvalue %[[R2]], %[[U]][0]
// CHECK-NEXT:  %[[F1:.*]] = llvm.insertvalue %[[R3]], %[[H1]][1]
// CHECK-NEXT:  func.return %[[F0]], %[[F1]]
func.func @ldmatrix_b_pair(%s: memref<32x128xf16, 3>, %i: index, %j: index) -> (!tile.frag<b, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>) {
  %b0, %b1 = tile.ldmatrix %s[%i, %j] trans swizzle #tile.swizzle<3, 3, 4> : memref<32x128xf16, 3> -> !tile.frag<b, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>
  func.return %b0, %b1 : !tile.frag<b, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>
}

// CHECK-LABEL: func.func @ldmatrix_b_x2
// CHECK:       nvvm.ldmatrix %{{.*}} num 2 : !llvm.ptr<3> -> !llvm.struct<(i32, i32)>
func.func @ldmatrix_b_x2(%s: memref<128x32xf16, 3>, %i: index, %j: index) -> !tile.frag<b, f16, m16n8k16> {
  %b = tile.ldmatrix %s[%i, %j] : memref<128x32xf16, 3> -> !tile.frag<b, f16, m16n8k16>
  func.return %b : !tile.frag<b, f16, m16n8k16>
}

// cp.async: unmasked is the plain 16-byte copy; masked checks every source index against the
// static shape (unsigned), reads from the base outside and passes src-size 0 to zero-fill.
// CHECK-LABEL: func.func @copies
// CHECK:       nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK:       %[[IN0:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i64
// CHECK:       %[[IN1:.*]] = llvm.icmp "ult" %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %[[IN:.*]] = llvm.and %[[IN0]], %[[IN1]] : i1
// CHECK:       llvm.select %[[IN]], %{{.*}}, %{{.*}} : i1, i64
// CHECK:       %[[N:.*]] = llvm.select %[[IN]], %{{.*}}, %{{.*}} : i1, i32
// CHECK-NEXT:  nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %[[N]] : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK-NEXT:  nvvm.cp.async.commit.group
// CHECK-NEXT:  nvvm.cp.async.wait.group 2
func.func @copies(%s: memref<64x32xf16, 3>, %g: memref<100x72xf16>, %i: index, %j: index) {
  tile.cp_async %s[%i, %j], %g[%i, %j] : memref<64x32xf16, 3>, memref<100x72xf16>
  tile.cp_async %s[%i, %j], %g[%i, %j] masked : memref<64x32xf16, 3>, memref<100x72xf16>
  tile.cp_async_commit
  tile.cp_async_wait 2
  func.return
}

// store_acc: lane l stores row l >> 2 (and + 8), columns 2 (l & 3) + {0, 1}: the epilogue runs
// per element with its own column, then cvt.rn.f16x2.f32 packs the pair for one 32-bit store.
// Masked: one scf.if per row (row < 100 and col < 200), epilogue inside.
// CHECK-LABEL: func.func @store
// CHECK:       nvvm.read.ptx.sreg.laneid
// CHECK:       %[[V0:.*]] = llvm.extractvalue %{{.*}}[0]
// CHECK-NEXT:  %[[V1:.*]] = llvm.extractvalue %{{.*}}[1]
// CHECK:       %[[ROW:.*]] = llvm.add %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %[[COL:.*]] = llvm.add %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %{{.*}} = llvm.add %[[ROW]], %{{.*}} : i64
// CHECK-NEXT:  %[[COL1:.*]] = llvm.add %[[COL]], %{{.*}} : i64
// CHECK-NEXT:  %[[ROWOK:.*]] = llvm.icmp "ult" %[[ROW]], %{{.*}} : i64
// CHECK-NEXT:  %[[COLOK:.*]] = llvm.icmp "ult" %[[COL]], %{{.*}} : i64
// CHECK-NEXT:  %[[OK:.*]] = llvm.and %[[ROWOK]], %[[COLOK]] : i1
// CHECK-NEXT:  scf.if %[[OK]] {
// CHECK-NEXT:    %[[C0:.*]] = builtin.unrealized_conversion_cast %[[COL]] : i64 to index
// CHECK-NEXT:    memref.load %{{.*}}[%[[C0]]] : memref<200xf16>
// CHECK-NEXT:    arith.extf
// CHECK-NEXT:    arith.addf %[[V0]], %{{.*}}
// CHECK-NEXT:    %[[T0:.*]] = nvvm.tanh.approx.f32
// CHECK-NEXT:    %[[C1:.*]] = builtin.unrealized_conversion_cast %[[COL1]] : i64 to index
// CHECK-NEXT:    memref.load %{{.*}}[%[[C1]]] : memref<200xf16>
// CHECK-NEXT:    arith.extf
// CHECK-NEXT:    arith.addf %[[V1]], %{{.*}}
// CHECK-NEXT:    %[[T1:.*]] = nvvm.tanh.approx.f32
// CHECK-NEXT:    llvm.mul %[[ROW]], %{{.*}} : i64
// CHECK-NEXT:    %[[LIN:.*]] = llvm.add %{{.*}}, %[[COL]] : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%[[LIN]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// CHECK-NEXT:    %[[W:.*]] = nvvm.cvt.pack f16 %[[T1]], %[[T0]]
// CHECK-NEXT:    llvm.store %[[W]], %[[P]] {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK-NEXT:  }
// CHECK:       scf.if
// CHECK-NOT:   scf.if
// CHECK:       func.return
func.func @store(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<100x200xf16>, %bias: memref<200xf16>, %i: index, %j: index) {
  tile.store_acc %c, %C[%i, %j] masked epilogue {
  ^bb0(%v: f32, %row: index, %col: index):
    %b = memref.load %bias[%col] : memref<200xf16>
    %bf = arith.extf %b : f16 to f32
    %s = arith.addf %v, %bf : f32
    %t = math.tanh %s : f32
    tile.yield %t : f32
  } : !tile.frag<acc, f32, m16n8k16>, memref<100x200xf16>
  func.return
}

// Unmasked f32 stores: no control flow, one store per element.
// CHECK-LABEL: func.func @store_f32
// CHECK-NOT:   scf.if
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-NOT:   llvm.store
// CHECK:       func.return
func.func @store_f32(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<64x64xf32>, %i: index, %j: index) {
  tile.store_acc %c, %C[%i, %j] : !tile.frag<acc, f32, m16n8k16>, memref<64x64xf32>
  func.return
}

// With convert-nvvm-to-llvm after it, the lane id is the sreg intrinsic, the tensor-core ops
// intrinsic calls or inline PTX, and nothing of tile or nvvm is left.
// NVVM-NOT: tile.
// NVVM-NOT: {{ nvvm\.}}
// NVVM:     llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.laneid"
// NVVM-NOT: tile.
// NVVM-NOT: {{ nvvm\.}}
