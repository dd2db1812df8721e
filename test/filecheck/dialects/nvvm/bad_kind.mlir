// RUN: not tilesync-opt %s 2>&1 | filecheck %s

func.func @unknown_kind(%p: !llvm.ptr<1>, %v: i32) {
  %0 = nvvm.atom mul relaxed, gpu %p, %v : !llvm.ptr<1>, i32
  func.return
}
// CHECK: Expected `add`, `exch`, `max`, `min`, `smax`, `smin`, `inc`, `dec`, `and`, `or`, or `xor`
