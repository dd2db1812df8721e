// RUN: tilesync-opt %s -p lower-affine | filecheck %s
// RUN: tilesync-opt %s -p lower-affine,convert-arith-to-llvm,reconcile-unrealized-casts | filecheck %s --check-prefix=LLVM

// affine's mod rounds toward minus infinity, like floordiv: (d0 - 1) mod 4 is 3 at d0 = 0,
// never -1 (a truncating remainder indexed before a semaphore array).

// CHECK-LABEL: func.func @wrap
// CHECK-NOT:     arith.remsi
// CHECK:         %[[Q:.*]] = arith.floordivsi %[[SHIFTED:.*]], %[[FOUR:.*]] : index
// CHECK:         %[[M:.*]] = arith.muli %[[Q]], %[[FOUR_AGAIN:.*]] : index
// CHECK:         %[[NEG:.*]] = arith.muli %[[M]], %{{.*}} : index
// CHECK:         %[[R:.*]] = arith.addi %{{.*}}, %[[NEG]] : index
// CHECK:         func.return %[[R]] : index
// LLVM-LABEL: func.func @wrap
// LLVM-NOT:     llvm.srem
// LLVM:         llvm.sdiv
func.func @wrap(%t: index) -> index {
  %r = affine.apply affine_map<(d0) -> ((d0 - 1) mod 4)>(%t)
  func.return %r : index
}

// A mod nested in another expression, and an affine.load whose index is an expression of
// its operand (a symbol of the parsed map, read as a dimension).
// CHECK-LABEL: func.func @nested
// CHECK-NOT:     arith.remsi
// CHECK:         arith.floordivsi
// CHECK:         arith.floordivsi
// CHECK:         memref.load
// CHECK-NOT:     arith.remsi
// CHECK:         func.return
func.func @nested(%t: index, %m: memref<8xf32>) -> (index, f32) {
  %r = affine.apply affine_map<(d0) -> (d0 * 2 + (d0 - 3) mod 8)>(%t)
  %v = affine.load %m[(%t - 5) mod 8] : memref<8xf32>
  func.return %r, %v : index, f32
}
