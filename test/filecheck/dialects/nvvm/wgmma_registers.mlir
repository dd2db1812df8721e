// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s
// wgmma with A in registers (and B N-major), and the fence the registers pass through.

// CHECK-LABEL: func.func @registers
// CHECK:       %{{.*}} = nvvm.wgmma.fence.registers[%{{.*}}, %{{.*}}] : i32, f32 -> !llvm.struct<(i32, f32)>
// CHECK-NEXT:  %{{.*}} = nvvm.wgmma.mma_async.reg_a f16 n = 8 trans_b[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}, %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NEXT:  %{{.*}} = nvvm.wgmma.mma_async.reg_a bf16 n = 8[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}, %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] -> !llvm.struct<(f32, f32, f32, f32)>
func.func @registers(%i: i32, %l: i64, %f: f32) {
  %0 = nvvm.wgmma.fence.registers[%i, %f] : i32, f32 -> !llvm.struct<(i32, f32)>
  %1 = nvvm.wgmma.mma_async.reg_a f16 n = 8 trans_b [%i, %i, %i, %i], %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32)>
  %2 = nvvm.wgmma.mma_async.reg_a bf16 n = 8 [%i, %i, %i, %i], %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32)>
  func.return
}
