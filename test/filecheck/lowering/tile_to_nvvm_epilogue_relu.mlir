// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-arith-to-llvm | filecheck %s --check-prefix=LLVM

// The GEMM's bias_relu epilogue (kernels/gemm.py): bias added, then max(x, 0), per element.
// CHECK-LABEL: func.func @store_bias_relu
// CHECK-COUNT-4: arith.maxnumf %{{.*}}, %{{.*}} : f32
// CHECK-NOT:   arith.maxnumf
// CHECK:       func.return
// LLVM-COUNT-4: llvm.intr.maxnum(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
func.func @store_bias_relu(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<64x64xf16>, %bias: memref<64xf16>, %i: index, %j: index) {
  tile.store_acc %c, %C[%i, %j] epilogue {
  ^bb0(%v: f32, %row: index, %col: index):
    %b = memref.load %bias[%col] : memref<64xf16>
    %bf = arith.extf %b : f16 to f32
    %x = arith.addf %v, %bf : f32
    %zero = arith.constant 0.000000e+00 : f32
    %y = arith.maxnumf %x, %zero : f32
    tile.yield %y : f32
  } : !tile.frag<acc, f32, m16n8k16>, memref<64x64xf16>
  func.return
}
