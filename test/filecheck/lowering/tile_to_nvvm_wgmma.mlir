// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=NVVM

// wgmma reads its operands through 64-bit shared-memory descriptors: the start address
// (& 0x3FFFF) >> 4, leading byte offset 16 (1 << 16), stride byte offset 1024 between 8-row
// atoms (64 << 32) and the 128-byte swizzle (1 << 62) = 4611686293305360384. The start is the
// memref's own descriptor plus the operand's offset in 16-byte units, its row's and its
// column's added apart (the memref's part is loop-invariant, a constant column folds). The
// asm ties the accumulators in and out (=f ... 0,1,...), scale-d comes in a register (1), no
// transposes.
// NVVM:      llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", "~{memory}"
// NVVM-NEXT: llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;", "~{memory}"
// NVVM:      llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, $10, 0;\0Awgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {$0, $1, $2, $3, $4, $5, $6, $7}, $8, $9, p, 1, 1, 0, 0;\0A}", "=f,=f,=f,=f,=f,=f,=f,=f,l,l,r,0,1,2,3,4,5,6,7" {{.*}} -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// NVVM:      llvm.inline_asm has_side_effects "wgmma.commit_group.sync.aligned;", "~{memory}"
// NVVM-NEXT: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 0;", "~{memory}"

// CHECK-LABEL: func.func @wgmma_step
// CHECK-DAG:   %[[ROW:.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK-DAG:   %[[MASK:.*]] = llvm.mlir.constant(262143) : i64
// CHECK-DAG:   %[[FOUR:.*]] = llvm.mlir.constant(4) : i64
// CHECK-DAG:   %[[HIGH:.*]] = llvm.mlir.constant(4611686293305360384) : i64
// CHECK-DAG:   %[[UNIT:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-DAG:   %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK:       nvvm.fence.proxy.async "shared::cta"
// CHECK-NEXT:  nvvm.wgmma.fence.aligned
// A[s, m, k]: row s * 128 + m (128 bytes each), column k (2 bytes each)
// CHECK-NEXT:  %[[SROWS:.*]] = llvm.mul %{{.*}}, %[[ROW]] : i32
// CHECK-NEXT:  %[[RA:.*]] = llvm.add %[[SROWS]], %{{.*}} : i32
// CHECK-NEXT:  %[[IA:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<3> to i64
// CHECK-NEXT:  %[[MA:.*]] = llvm.and %[[IA]], %[[MASK]] : i64
// CHECK-NEXT:  %[[SA:.*]] = llvm.lshr %[[MA]], %[[FOUR]] : i64
// CHECK-NEXT:  %[[BA:.*]] = llvm.or %[[SA]], %[[HIGH]] : i64
// CHECK-NEXT:  %[[RBA:.*]] = llvm.mul %[[RA]], %[[ROW]] : i32
// CHECK-NEXT:  %[[RUA:.*]] = llvm.lshr %[[RBA]], %[[UNIT]] : i32
// CHECK-NEXT:  %[[RZA:.*]] = llvm.zext %[[RUA]] : i32 to i64
// CHECK-NEXT:  %[[DA0:.*]] = llvm.add %[[BA]], %[[RZA]] : i64
// CHECK-NEXT:  %[[KB:.*]] = llvm.mul %{{.*}}, %[[TWO]] : i32
// CHECK-NEXT:  %[[KU:.*]] = llvm.lshr %[[KB]], %[[UNIT]] : i32
// CHECK-NEXT:  %[[KZ:.*]] = llvm.zext %[[KU]] : i32 to i64
// CHECK-NEXT:  %[[DA:.*]] = llvm.add %[[DA0]], %[[KZ]] : i64
// B[s, 0, k]: the same column, so the same 16-byte units
// CHECK:       %[[IB:.*]] = llvm.ptrtoint %{{.*}} : !llvm.ptr<3> to i64
// CHECK-NEXT:  %[[MB:.*]] = llvm.and %[[IB]], %[[MASK]] : i64
// CHECK-NEXT:  %[[SB:.*]] = llvm.lshr %[[MB]], %[[FOUR]] : i64
// CHECK-NEXT:  %[[BB:.*]] = llvm.or %[[SB]], %[[HIGH]] : i64
// CHECK-NEXT:  %[[RBB:.*]] = llvm.mul %{{.*}}, %[[ROW]] : i32
// CHECK-NEXT:  %[[RUB:.*]] = llvm.lshr %[[RBB]], %[[UNIT]] : i32
// CHECK-NEXT:  %[[RZB:.*]] = llvm.zext %[[RUB]] : i32 to i64
// CHECK-NEXT:  %[[DB0:.*]] = llvm.add %[[BB]], %[[RZB]] : i64
// CHECK-NEXT:  %[[DB:.*]] = llvm.add %[[DB0]], %[[KZ]] : i64
// CHECK-COUNT-8: llvm.extractvalue %c{{[01]}}[{{[0-3]}}] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:  %[[D:.*]] = nvvm.wgmma.mma_async f16 n = 16 %[[DA]], %[[DB]], %[[ONE]], [{{.*}}] -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
// The second accumulator is registers 4..7 of the result.
// CHECK:       llvm.extractvalue %[[D]][7]
// CHECK:       nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:  nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT:   tile.
func.func @wgmma_step(%a: memref<3x128x64xf16, 3>, %b: memref<3x16x64xf16, 3>, %s: index,
                      %m: index, %k: index, %c0: !tile.frag<acc, f32, m16n8k16>,
                      %c1: !tile.frag<acc, f32, m16n8k16>) -> !tile.frag<acc, f32, m16n8k16> {
  %n = arith.constant 0 : index
  tile.fence_proxy_async
  tile.wgmma_fence
  %d0, %d1 = tile.wgmma %a[%s, %m, %k], %b[%s, %n, %k], %c0, %c1 : memref<3x128x64xf16, 3>, memref<3x16x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  tile.wgmma_commit
  tile.wgmma_wait 0
  func.return %d1 : !tile.frag<acc, f32, m16n8k16>
}

// bf16 operands name .bf16 in the instruction.
// CHECK-LABEL: func.func @wgmma_bf16
// CHECK:       nvvm.wgmma.mma_async bf16 n = 8
// NVVM:        wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16
func.func @wgmma_bf16(%a: memref<64x64xbf16, 3>, %b: memref<8x64xbf16, 3>, %i: index,
                      %c: !tile.frag<acc, f32, m16n8k16>) -> !tile.frag<acc, f32, m16n8k16> {
  %d = tile.wgmma %a[%i, %i], %b[%i, %i], %c : memref<64x64xbf16, 3>, memref<8x64xbf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return %d : !tile.frag<acc, f32, m16n8k16>
}

// Chained wgmmas (the k16 steps of a k-tile) pass registers, not structs: the second reads
// the first's results as they come out of its asm, and no struct is built in between.
// CHECK-LABEL: func.func @wgmma_chain
// CHECK:       %[[R1:.*]] = nvvm.wgmma.mma_async f16 n = 8
// CHECK-NEXT:  %[[X0:.*]] = llvm.extractvalue %[[R1]][0]
// CHECK-NEXT:  %[[X1:.*]] = llvm.extractvalue %[[R1]][1]
// CHECK-NEXT:  %[[X2:.*]] = llvm.extractvalue %[[R1]][2]
// CHECK-NEXT:  %[[X3:.*]] = llvm.extractvalue %[[R1]][3]
// CHECK-NOT:   llvm.insertvalue
// CHECK:       nvvm.wgmma.mma_async f16 n = 8 {{.*}}, [%[[X0]], %[[X1]], %[[X2]], %[[X3]]]
func.func @wgmma_chain(%a: memref<64x64xf16, 3>, %b: memref<8x64xf16, 3>, %i: index,
                       %c: !tile.frag<acc, f32, m16n8k16>) -> !tile.frag<acc, f32, m16n8k16> {
  %d = tile.wgmma %a[%i, %i], %b[%i, %i], %c : memref<64x64xf16, 3>, memref<8x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  %e = tile.wgmma %a[%i, %i], %b[%i, %i], %d : memref<64x64xf16, 3>, memref<8x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return %e : !tile.frag<acc, f32, m16n8k16>
}

// B N-major (trans_b) over two 64-column atoms of 64 K rows: B's descriptor carries the
// leading byte offset between the atoms, 64 x 128 = 8192 bytes (512 << 16; A keeps 1 << 16),
// and the instruction's imm-trans-b is 1.
// CHECK-LABEL: func.func @wgmma_b_n_major
// CHECK-DAG:   %{{.*}} = llvm.mlir.constant(4611686293305360384) : i64
// CHECK-DAG:   %{{.*}} = llvm.mlir.constant(4611686293338849280) : i64
// CHECK:       nvvm.wgmma.mma_async f16 n = 128 trans_b %{{.*}}, %{{.*}}, %{{.*}}, [{{.*}}] -> !llvm.struct<(f32, {{.*}}f32)>
// NVVM:        wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{.*}}, p, 1, 1, 0, 1;
func.func @wgmma_b_n_major(%a: memref<64x64xf16, 3>, %b: memref<2x64x64xf16, 3>, %i: index,
                           %c: !tile.frag<acc, f32, m16n8k16>) -> !tile.frag<acc, f32, m16n8k16> {
  %d:16 = tile.wgmma %a[%i, %i], %b[%i, %i, %i] trans_b, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c, %c : memref<64x64xf16, 3>, memref<2x64x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return %d#15 : !tile.frag<acc, f32, m16n8k16>
}
