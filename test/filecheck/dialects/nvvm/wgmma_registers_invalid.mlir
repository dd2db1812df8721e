// RUN: tilesync-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @three_a_registers(%i: i32, %l: i64, %f: f32) {
  %1 = nvvm.wgmma.mma_async.reg_a f16 n = 8 [%i, %i, %i], %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32)>
  func.return
}
// CHECK: 'nvvm.wgmma.mma_async.reg_a' takes A in 4 registers, got 3

// -----

func.func @accumulators_not_n_over_2(%i: i32, %l: i64, %f: f32) {
  %1 = nvvm.wgmma.mma_async.reg_a f16 n = 16 [%i, %i, %i, %i], %l, %i, [%f, %f, %f, %f] -> !llvm.struct<(f32, f32, f32, f32)>
  func.return
}
// CHECK: 'nvvm.wgmma.mma_async.reg_a' m64n16k16 takes 8 accumulator registers, got 4

// -----

func.func @fence_struct_of_other_types(%i: i32, %f: f32) {
  %0 = nvvm.wgmma.fence.registers[%i, %f] : i32, f32 -> !llvm.struct<(f32, f32)>
  func.return
}
// CHECK: 'nvvm.wgmma.fence.registers' yields !llvm.struct<(i32, f32)>, got !llvm.struct<(f32, f32)>
