// RUN: not tilesync-opt %s 2>&1 | filecheck %s

func.func @unknown_scope() {
  nvvm.fence acq_rel, device
  func.return
}
// CHECK: bad_scope.mlir:4:23: error: Expected `cta`, `cluster`, `gpu`, or `sys`
