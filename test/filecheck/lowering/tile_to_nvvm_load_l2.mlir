// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=PTX

// tile.load_l2 reads its 16 bytes with one weak load cached at L2 only (ld.global.cg.v2.b64,
// two i64) and joins them low | high << 64.
// CHECK-LABEL: func.func @load_l2
// CHECK:       %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i128
// CHECK-NEXT:  %[[PAIR:.*]] = nvvm.ld.global.cg.v2 %[[P]] : !llvm.ptr<1> -> !llvm.struct<(i64, i64)>
// CHECK-NEXT:  %[[LO:.*]] = llvm.extractvalue %[[PAIR]][0] : !llvm.struct<(i64, i64)>
// CHECK-NEXT:  %[[WLO:.*]] = llvm.zext %[[LO]] : i64 to i128
// CHECK-NEXT:  %[[HI:.*]] = llvm.extractvalue %[[PAIR]][1] : !llvm.struct<(i64, i64)>
// CHECK-NEXT:  %[[WHI:.*]] = llvm.zext %[[HI]] : i64 to i128
// CHECK-NEXT:  %[[UP:.*]] = llvm.shl %[[WHI]], %{{.*}} : i128
// CHECK-NEXT:  %{{.*}} = llvm.or %[[WLO]], %[[UP]] : i128
// CHECK-NOT:   llvm.load
// PTX:         llvm.inline_asm has_side_effects "ld.global.cg.v2.b64 {$0, $1}, [$2];", "=l,=l,l,~{memory}"
func.func @load_l2(%ring: memref<?xi128>, %i: index) -> i128 {
  %v = tile.load_l2 %ring[%i] : memref<?xi128> -> i128
  func.return %v : i128
}
