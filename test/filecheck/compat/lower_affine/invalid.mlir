// RUN: not tilesync-opt %s -p lower-affine 2>&1 | filecheck %s

// Loop bounds that are not constants: one located error, not an exception of xDSL's.
// CHECK: invalid.mlir:7:3: error: lower-affine: affine.for bounds lower to constants only
// CHECK-NOT: Traceback
func.func @loop(%n: index) {
  affine.for %i = 0 to %n {
  }
  func.return
}
