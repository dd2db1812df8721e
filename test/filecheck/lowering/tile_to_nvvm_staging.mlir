// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s

// A TMA-store epilogue's staging store: the values go to the shared buffer at its indices
// (warpgroup, box, row, column) plus the lane's place, while the epilogue reads the bias at
// the lane's column of the output tensor, `at` plus the same lane offset.
// CHECK-LABEL: func.func @staging
// CHECK:       %[[COL:.*]] = builtin.unrealized_conversion_cast %col : index to i64
// CHECK:       %[[LANE_ROW:.*]] = llvm.zext %{{.*}} : i32 to i64
// CHECK:       %[[LANE_COL:.*]] = llvm.zext %{{.*}} : i32 to i64
// CHECK:       %[[C:.*]] = builtin.unrealized_conversion_cast %c : index to i64
// CHECK:       %[[STAGE:.*]] = builtin.unrealized_conversion_cast %stage : memref<2x4x64x64xf16, 3 : i64> to !llvm.ptr<3>
// CHECK:       %[[BUF_COL:.*]] = llvm.add %[[C]], %[[LANE_COL]] : i64
// CHECK:       %[[OUT_COL:.*]] = llvm.add %[[COL]], %[[LANE_COL]] : i64
// CHECK:       %[[J:.*]] = builtin.unrealized_conversion_cast %[[OUT_COL]] : i64 to index
// CHECK-NEXT:  memref.load %bias[%[[J]]] : memref<4096xf16>
// CHECK:       %[[OFFSET:.*]] = llvm.add %{{.*}}, %[[BUF_COL]] : i64
// CHECK-NEXT:  %[[ADDRESS:.*]] = llvm.getelementptr inbounds %[[STAGE]][%[[OFFSET]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f16
// CHECK-NEXT:  %[[PAIR:.*]] = nvvm.cvt.pack f16
// CHECK-NEXT:  llvm.store %[[PAIR]], %[[ADDRESS]] {alignment = 4 : i64} : i32, !llvm.ptr<3>
// CHECK-NOT:   tile.
func.func @staging(%d: !tile.frag<acc, f32, m16n8k16>, %stage: memref<2x4x64x64xf16, 3>,
                   %bias: memref<4096xf16>, %g: index, %b: index, %r: index, %c: index,
                   %row: index, %col: index) {
  tile.store_acc %d, %stage[%g, %b, %r, %c] at [%row, %col] epilogue {
  ^bb0(%v: f32, %i: index, %j: index):
    %bv = memref.load %bias[%j] : memref<4096xf16>
    %bf = arith.extf %bv : f16 to f32
    %s = arith.addf %v, %bf : f32
    tile.yield %s : f32
  } : !tile.frag<acc, f32, m16n8k16>, memref<2x4x64x64xf16, 3>
  func.return
}
