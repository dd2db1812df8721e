// RUN: tilesync-opt %s -p lower-scf-to-cf | filecheck %s

// A spin loop (scf.while) nested in an scf.for: both reach cf.
func.func @spin(%n: index, %limit: i32) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (i32) {
    %w = scf.while (%v = %acc) : (i32) -> i32 {
      %more = arith.cmpi slt, %v, %limit : i32
      scf.condition(%more) %v : i32
    } do {
    ^bb0(%v2: i32):
      %next = arith.addi %v2, %one : i32
      scf.yield %next : i32
    }
    scf.yield %w : i32
  }
  func.return %r : i32
}

// CHECK-LABEL: func.func @spin
// CHECK-NOT:   scf.
// CHECK:       cf.br ^[[FOR:.*]](%{{.*}}, %{{.*}} : index, i32)
// CHECK:       ^[[FOR]](%[[I:.*]]: index, %[[ACC:.*]]: i32):
// CHECK:       cf.cond_br %{{.*}}, ^[[BODY:.*]], ^[[END:.*]]
// CHECK:       ^[[BODY]]:
// CHECK-NEXT:  cf.br ^[[BEFORE:.*]](%[[ACC]] : i32)
// CHECK:       ^[[BEFORE]](%[[V:.*]]: i32):
// CHECK-NEXT:  %[[MORE:.*]] = arith.cmpi slt, %[[V]], %limit : i32
// CHECK-NEXT:  cf.cond_br %[[MORE]], ^[[AFTER:.*]](%[[V]] : i32), ^[[EXIT:.*]](%[[V]] : i32)
// CHECK:       ^[[AFTER]](%[[V2:.*]]: i32):
// CHECK-NEXT:  %[[NEXT:.*]] = arith.addi %[[V2]], %{{.*}} : i32
// CHECK-NEXT:  cf.br ^[[BEFORE]](%[[NEXT]] : i32)
// CHECK:       ^[[EXIT]](%[[W:.*]]: i32):
// CHECK:       cf.br ^[[FOR]](%{{.*}}, %[[W]] : index, i32)
// CHECK-NOT:   scf.
