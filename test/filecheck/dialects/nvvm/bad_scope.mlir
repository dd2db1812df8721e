// RUN: not tilesync-opt %s 2>&1 | filecheck %s

func.func @unknown_scope() {
  nvvm.fence acq_rel, device
  func.return
}
// CHECK: nvvm.fence acq_rel, device
// CHECK: Expected `cta`, `cluster`, `gpu`, or `sys`
