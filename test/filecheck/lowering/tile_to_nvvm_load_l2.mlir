// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s

// tile.load_l2 reads at L2 with ld.relaxed.gpu: an i64 in one load, an i128 as its two 8-byte
// halves (the high one 8 bytes on) joined low | high << 64.
// CHECK-LABEL: func.func @load_l2
// CHECK:       %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i128
// CHECK-NEXT:  %[[LO:.*]] = nvvm.ld relaxed, gpu %[[P]] : !llvm.ptr<1> -> i64
// CHECK-NEXT:  %[[PH:.*]] = llvm.getelementptr inbounds %[[P]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i64
// CHECK-NEXT:  %[[HI:.*]] = nvvm.ld relaxed, gpu %[[PH]] : !llvm.ptr<1> -> i64
// CHECK-NEXT:  %[[WLO:.*]] = llvm.zext %[[LO]] : i64 to i128
// CHECK-NEXT:  %[[WHI:.*]] = llvm.zext %[[HI]] : i64 to i128
// CHECK-NEXT:  %[[UP:.*]] = llvm.shl %[[WHI]], %{{.*}} : i128
// CHECK-NEXT:  %{{.*}} = llvm.or %[[WLO]], %[[UP]] : i128
// CHECK:       nvvm.ld relaxed, gpu %{{.*}} : !llvm.ptr<1> -> i64
// CHECK-NOT:   llvm.load
func.func @load_l2(%ring: memref<?xi128>, %words: memref<16xi64>, %i: index) -> (i128, i64) {
  %v = tile.load_l2 %ring[%i] : memref<?xi128> -> i128
  %w = tile.load_l2 %words[%i] : memref<16xi64> -> i64
  func.return %v, %w : i128, i64
}
