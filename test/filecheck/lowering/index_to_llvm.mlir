// RUN: tilesync-opt %s --allow-unregistered-dialect -p convert-index-to-llvm | filecheck %s
// RUN: tilesync-opt %s --allow-unregistered-dialect -p convert-index-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s --check-prefix=FULL

// xDSL 0.74 has no index dialect: upstream's index ops arrive in generic form.

// CHECK-LABEL: func.func @arith
// CHECK: %[[C:.*]] = llvm.mlir.constant(5) : i64
// CHECK: %[[A:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK: llvm.add %[[A]], %{{.*}} : i64
// CHECK: llvm.sub
// CHECK: llvm.mul
// CHECK: llvm.sdiv
// CHECK: llvm.udiv
// CHECK: llvm.srem
// CHECK: llvm.urem
// CHECK: llvm.shl
// CHECK: llvm.ashr
// CHECK: llvm.lshr
// CHECK: llvm.and
// CHECK: llvm.or
// CHECK: llvm.xor
// CHECK: llvm.icmp "sgt"
// CHECK-NEXT: llvm.select
// CHECK: llvm.icmp "ult"
// CHECK-NEXT: llvm.select
// CHECK-NOT: "index.
func.func @arith(%a: index, %b: index) -> index {
  %c = "index.constant"() {value = 5 : index} : () -> index
  %0 = "index.add"(%a, %c) : (index, index) -> index
  %1 = "index.sub"(%0, %b) : (index, index) -> index
  %2 = "index.mul"(%1, %b) : (index, index) -> index
  %3 = "index.divs"(%2, %b) : (index, index) -> index
  %4 = "index.divu"(%3, %b) : (index, index) -> index
  %5 = "index.rems"(%4, %b) : (index, index) -> index
  %6 = "index.remu"(%5, %b) : (index, index) -> index
  %7 = "index.shl"(%6, %b) : (index, index) -> index
  %8 = "index.shrs"(%7, %b) : (index, index) -> index
  %9 = "index.shru"(%8, %b) : (index, index) -> index
  %10 = "index.and"(%9, %b) : (index, index) -> index
  %11 = "index.or"(%10, %b) : (index, index) -> index
  %12 = "index.xor"(%11, %b) : (index, index) -> index
  %13 = "index.maxs"(%12, %b) : (index, index) -> index
  %14 = "index.minu"(%13, %b) : (index, index) -> index
  func.return %14 : index
}

// FULL-LABEL: llvm.func @compare
// FULL-SAME: (%[[A:.*]]: i64, %[[B:.*]]: i64) -> i1
// FULL-NEXT: %[[LT:.*]] = llvm.icmp "slt" %[[A]], %[[B]] : i64
// FULL-NEXT: llvm.return %[[LT]] : i1
func.func @compare(%a: index, %b: index) -> i1 {
  %lt = "index.cmp"(%a, %b) {pred = #index<cmp_predicate slt>} : (index, index) -> i1
  func.return %lt : i1
}

// FULL-LABEL: llvm.func @casts
// FULL-SAME: (%[[A:.*]]: i64, %[[N:.*]]: i32) -> i32
// FULL-NEXT: %[[WIDE:.*]] = llvm.zext %[[N]] : i32 to i64
// FULL-NEXT: %[[SUM:.*]] = llvm.add %[[A]], %[[WIDE]] : i64
// FULL-NEXT: %[[NARROW:.*]] = llvm.trunc %[[SUM]] : i64 to i32
// FULL-NEXT: llvm.return %[[NARROW]] : i32
func.func @casts(%a: index, %n: i32) -> i32 {
  %wide = "index.castu"(%n) : (i32) -> index
  %sum = "index.add"(%a, %wide) : (index, index) -> index
  %narrow = "index.casts"(%sum) : (index) -> i32
  func.return %narrow : i32
}

// FULL-LABEL: llvm.func @ceildiv_sizeof
// FULL: llvm.sdiv
// FULL: llvm.srem
// FULL: llvm.icmp "eq"
// FULL: llvm.mlir.constant(64) : i64
// FULL-NOT: unrealized_conversion_cast
// FULL-NOT: "index.
func.func @ceildiv_sizeof(%a: index, %b: index) -> index {
  %q = "index.ceildivs"(%a, %b) : (index, index) -> index
  %bits = "index.sizeof"() : () -> index
  %r = "index.add"(%q, %bits) : (index, index) -> index
  func.return %r : index
}
