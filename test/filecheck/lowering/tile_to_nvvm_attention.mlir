// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=NVVM

// Fused attention's register ops: an accumulator's values are its struct's members (unpack,
// pack: no data moves); two accumulators become an A fragment by packing each row's two
// columns into one f16x2 register (cvt.rn.f16x2.f32 hi, lo: c1 over c0, c3 over c2, lo's
// then hi's); the fragments a wgmma reads pass through the fence tied in and out, and the
// wgmma takes the fence's results; A from registers, v read N-major (imm-trans-b 1).
// NVVM:      llvm.inline_asm "cvt.rn.f16x2.f32 $0, $1, $2;", "=r,f,f"
// NVVM:      llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;", "=r,=r,=r,=r,=f,=f,=f,=f,0,1,2,3,4,5,6,7,~{memory}"
// NVVM:      llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, $9, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$4, $5, $6, $7}, $8, p, 1, 1, 1;\0A}", "=f,=f,=f,=f,r,r,r,r,l,r,0,1,2,3"

// CHECK-LABEL: func.func @attention_step
// CHECK:       %[[O0:.*]] = llvm.extractvalue %o[0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:  %[[O1:.*]] = llvm.extractvalue %o[1]
// CHECK-NEXT:  %[[O2:.*]] = llvm.extractvalue %o[2]
// CHECK-NEXT:  %[[O3:.*]] = llvm.extractvalue %o[3]
// CHECK-NEXT:  %[[M0:.*]] = arith.mulf %[[O0]], %alpha : f32
// CHECK-NEXT:  %[[M1:.*]] = arith.mulf %[[O1]], %alpha : f32
// CHECK-NEXT:  %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:  %[[R0:.*]] = llvm.insertvalue %[[M0]], %[[U]][0]
// CHECK-NEXT:  %[[R1:.*]] = llvm.insertvalue %[[M1]], %[[R0]][1]
// CHECK-NEXT:  %[[R2:.*]] = llvm.insertvalue %[[O2]], %[[R1]][2]
// CHECK-NEXT:  %[[R:.*]] = llvm.insertvalue %[[O3]], %[[R2]][3]
// CHECK-NEXT:  %[[L0:.*]] = llvm.extractvalue %s0[0]
// CHECK-NEXT:  %[[L1:.*]] = llvm.extractvalue %s0[1]
// CHECK-NEXT:  %[[L2:.*]] = llvm.extractvalue %s0[2]
// CHECK-NEXT:  %[[L3:.*]] = llvm.extractvalue %s0[3]
// CHECK-NEXT:  %[[A0:.*]] = nvvm.cvt.pack f16 %[[L1]], %[[L0]]
// CHECK-NEXT:  %[[A1:.*]] = nvvm.cvt.pack f16 %[[L3]], %[[L2]]
// CHECK-NEXT:  %[[H0:.*]] = llvm.extractvalue %s1[0]
// CHECK-NEXT:  %[[H1:.*]] = llvm.extractvalue %s1[1]
// CHECK-NEXT:  %[[H2:.*]] = llvm.extractvalue %s1[2]
// CHECK-NEXT:  %[[H3:.*]] = llvm.extractvalue %s1[3]
// CHECK-NEXT:  %[[A2:.*]] = nvvm.cvt.pack f16 %[[H1]], %[[H0]]
// CHECK-NEXT:  %[[A3:.*]] = nvvm.cvt.pack f16 %[[H3]], %[[H2]]
// CHECK:       %[[F:.*]] = nvvm.wgmma.fence.registers[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : i32, i32, i32, i32, f32, f32, f32, f32 -> !llvm.struct<(i32, i32, i32, i32, f32, f32, f32, f32)>
// CHECK-NEXT:  %[[FA0:.*]] = llvm.extractvalue %[[F]][0]
// CHECK-NEXT:  %[[FA1:.*]] = llvm.extractvalue %[[F]][1]
// CHECK-NEXT:  %[[FA2:.*]] = llvm.extractvalue %[[F]][2]
// CHECK-NEXT:  %[[FA3:.*]] = llvm.extractvalue %[[F]][3]
// CHECK:       %[[FO0:.*]] = llvm.extractvalue %[[F]][4]
// CHECK-NEXT:  %[[FO1:.*]] = llvm.extractvalue %[[F]][5]
// CHECK-NEXT:  %[[FO2:.*]] = llvm.extractvalue %[[F]][6]
// CHECK-NEXT:  %[[FO3:.*]] = llvm.extractvalue %[[F]][7]
// CHECK:       %{{.*}} = nvvm.wgmma.mma_async.reg_a f16 n = 8 trans_b[%[[FA0]], %[[FA1]], %[[FA2]], %[[FA3]]], %{{.*}}, %{{.*}}, [%[[FO0]], %[[FO1]], %[[FO2]], %[[FO3]]] -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:       nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT:  nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT:   tile.
func.func @attention_step(%s0: !tile.frag<acc, f32, m16n8k16>, %s1: !tile.frag<acc, f32, m16n8k16>,
                          %o: !tile.frag<acc, f32, m16n8k16>, %alpha: f32,
                          %v: memref<2x64x64xf16, 3>, %st: index, %k: index) -> !tile.frag<acc, f32, m16n8k16> {
  %c:4 = tile.unpack_acc %o : !tile.frag<acc, f32, m16n8k16>
  %m0 = arith.mulf %c#0, %alpha : f32
  %m1 = arith.mulf %c#1, %alpha : f32
  %r = tile.pack_acc %m0, %m1, %c#2, %c#3 : !tile.frag<acc, f32, m16n8k16>
  %a = tile.acc_to_a %s0, %s1 : !tile.frag<acc, f32, m16n8k16> -> !tile.frag<a, f16, m16n8k16>
  %f:2 = tile.wgmma_fence (%a, %r) : !tile.frag<a, f16, m16n8k16>, !tile.frag<acc, f32, m16n8k16>
  %zero = arith.constant 0 : index
  %d = tile.wgmma_reg_a %f#0, %v[%st, %k, %zero] trans_b, %f#1 : !tile.frag<a, f16, m16n8k16>, memref<2x64x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  tile.wgmma_commit
  tile.wgmma_wait 0
  func.return %d : !tile.frag<acc, f32, m16n8k16>
}
