// RUN: tilesync-opt %s -p convert-cf-to-llvm | filecheck %s
// RUN: tilesync-opt %s -p convert-cf-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s --check-prefix=FULL
// The order of the passes does not matter: func before cf converts the same.
// RUN: tilesync-opt %s -p convert-func-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts | filecheck %s --check-prefix=FULL

// Successor blocks take i64 / !llvm.ptr arguments; their bodies see the old types via casts.
// CHECK-LABEL: func.func @loop
// CHECK: %[[C0:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK: %[[M:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<8xf32> to !llvm.ptr<1>
// CHECK: llvm.br ^[[HEADER:.*]](%[[C0]], %[[M]] : i64, !llvm.ptr<1>)
// CHECK: ^[[HEADER]](%[[I:.*]]: i64, %[[BUF:.*]]: !llvm.ptr<1>):
// CHECK-NEXT: %[[I_IDX:.*]] = builtin.unrealized_conversion_cast %[[I]] : i64 to index
// CHECK: llvm.cond_br %{{.*}}, ^{{.*}}, ^[[EXIT:.*]](%{{.*}} : i64)
// CHECK: llvm.br ^[[HEADER]](%{{.*}}, %{{.*}} : i64, !llvm.ptr<1>)
// CHECK: ^[[EXIT]](%{{.*}}: i64):
// CHECK-NOT: cf.

// FULL-LABEL: llvm.func @loop
// FULL-SAME: (%[[N:.*]]: i64, %[[MEM:.*]]: !llvm.ptr<1>) -> i64
// FULL: llvm.br ^[[HEADER:.*]](%{{.*}}, %[[MEM]] : i64, !llvm.ptr<1>)
// FULL: ^[[HEADER]](%[[I:.*]]: i64, %[[BUF:.*]]: !llvm.ptr<1>):
// FULL-NEXT: %[[COND:.*]] = llvm.icmp "slt" %[[I]], %[[N]] : i64
// FULL-NEXT: llvm.cond_br %[[COND]], ^{{.*}}, ^[[EXIT:.*]](%[[I]] : i64)
// FULL: llvm.br ^[[HEADER]](%{{.*}}, %[[BUF]] : i64, !llvm.ptr<1>)
// FULL: ^[[EXIT]](%[[R:.*]]: i64):
// FULL-NEXT: llvm.return %[[R]] : i64
// FULL-NOT: unrealized_conversion_cast
// FULL-NOT: cf.
func.func @loop(%n: index, %m: memref<8xf32>) -> index {
  %c0 = arith.constant 0 : index
  cf.br ^header(%c0, %m : index, memref<8xf32>)
^header(%i: index, %buf: memref<8xf32>):
  %cond = arith.cmpi slt, %i, %n : index
  cf.cond_br %cond, ^body, ^exit(%i : index)
^body:
  %c1 = arith.constant 1 : index
  %next = arith.addi %i, %c1 : index
  cf.br ^header(%next, %buf : index, memref<8xf32>)
^exit(%r: index):
  func.return %r : index
}

// cf.switch becomes a chain of compare-and-branch blocks ending in the default.
// CHECK-LABEL: func.func @switch
// CHECK-SAME: (%[[FLAG:.*]]: i32, %[[A:.*]]: f32, %[[B:.*]]: f32)
// CHECK: %[[V0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[IS0:.*]] = llvm.icmp "eq" %[[FLAG]], %[[V0]] : i32
// CHECK-NEXT: llvm.cond_br %[[IS0]], ^[[C0:.*]](%[[B]] : f32), ^[[NEXT:.*]]
// CHECK: ^[[NEXT]]:
// CHECK-NEXT: %[[V7:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK-NEXT: %[[IS7:.*]] = llvm.icmp "eq" %[[FLAG]], %[[V7]] : i32
// CHECK-NEXT: llvm.cond_br %[[IS7]], ^[[C1:.*]], ^[[DEFAULT:.*]](%[[A]] : f32)
// CHECK-NOT: cf.switch
func.func @switch(%flag: i32, %a: f32, %b: f32) -> f32 {
  cf.switch %flag : i32, [
    default: ^d(%a : f32),
    0: ^c0(%b : f32),
    7: ^c1
  ]
^d(%x: f32):
  func.return %x : f32
^c0(%y: f32):
  func.return %y : f32
^c1:
  func.return %a : f32
}
