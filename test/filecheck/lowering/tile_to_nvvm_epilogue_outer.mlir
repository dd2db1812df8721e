// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s

// An epilogue may yield a value defined above it: every element stores that value.
// CHECK-LABEL: func.func @store_outer
// CHECK-SAME:  %[[K:[^:]*]]: f32
// CHECK-COUNT-4: llvm.store %[[K]], %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-NOT:   llvm.store
// CHECK:       func.return
func.func @store_outer(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<64x64xf32>, %i: index, %j: index, %k: f32) {
  tile.store_acc %c, %C[%i, %j] epilogue {
  ^bb0(%v: f32, %row: index, %col: index):
    tile.yield %k : f32
  } : !tile.frag<acc, f32, m16n8k16>, memref<64x64xf32>
  func.return
}
