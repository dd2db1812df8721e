// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s

// A staged epilogue's way out: one thread's 16 bytes, read from the swizzled ring (the
// chunk bits of the element offset XORed with its row bits) and stored to C, as one i128
// each way; `masked` stores only a chunk inside C.
// CHECK-LABEL: func.func @copy_out
// CHECK:       %[[C:.*]] = builtin.unrealized_conversion_cast %C : memref<300x256xf16> to !llvm.ptr<1>
// CHECK:       %[[RING:.*]] = builtin.unrealized_conversion_cast %ring : memref<4x128x64xf16, 3 : i64> to !llvm.ptr<3>
// CHECK:       %[[ROW_BITS:.*]] = llvm.lshr %[[LINEAR:.*]], %{{.*}} : i32
// CHECK-NEXT:  %[[MOVED:.*]] = llvm.and %[[ROW_BITS]], %{{.*}} : i32
// CHECK-NEXT:  %[[SWIZZLED:.*]] = llvm.xor %[[LINEAR]], %[[MOVED]] : i32
// CHECK-NEXT:  %[[SRC:.*]] = llvm.getelementptr inbounds %[[RING]][%[[SWIZZLED]]] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f16
// CHECK:       %[[INSIDE:.*]] = llvm.and %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:  scf.if %[[INSIDE]] {
// CHECK-NEXT:    %[[CHUNK:.*]] = llvm.load %[[SRC]] {alignment = 16 : i64} : !llvm.ptr<3> -> i128
// CHECK:         %[[DST:.*]] = llvm.getelementptr inbounds %[[C]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// CHECK-NEXT:    llvm.store %[[CHUNK]], %[[DST]] {alignment = 16 : i64} : i128, !llvm.ptr<1>
// CHECK-NEXT:  }
// CHECK-NOT:   tile.
func.func @copy_out(%C: memref<300x256xf16>, %ring: memref<4x128x64xf16, 3>, %box: index,
                    %r: index, %c: index, %i: index, %j: index) {
  tile.copy_out %C[%i, %j], %ring[%box, %r, %c] masked swizzle #tile.swizzle<3, 3, 3>
      : memref<300x256xf16>, memref<4x128x64xf16, 3>
  func.return
}

// Unmasked: no guard.
// CHECK-LABEL: func.func @unmasked
// CHECK-NOT:   scf.if
// CHECK:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> i128
// CHECK-NOT:   scf.if
// CHECK:       llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : i128, !llvm.ptr<1>
func.func @unmasked(%C: memref<128x256xf16>, %ring: memref<4x128x64xf16, 3>, %box: index,
                    %r: index, %c: index, %i: index, %j: index) {
  tile.copy_out %C[%i, %j], %ring[%box, %r, %c] : memref<128x256xf16>, memref<4x128x64xf16, 3>
  func.return
}
