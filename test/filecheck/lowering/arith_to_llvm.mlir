// RUN: tilesync-opt %s -p convert-arith-to-llvm | filecheck %s
// RUN: tilesync-opt %s -p convert-arith-to-llvm,reconcile-unrealized-casts | filecheck %s --check-prefix=RECONCILED

// CHECK-LABEL: func.func @constants
// CHECK-DAG: llvm.mlir.constant(7 : i32) : i32
// CHECK-DAG: llvm.mlir.constant(42) : i64
// CHECK-DAG: llvm.mlir.constant(true) : i1
// CHECK-DAG: llvm.mlir.constant(1.500000e+00 : f16) : f16
// CHECK-DAG: llvm.mlir.constant(2.000000e+00 : bf16) : bf16
// CHECK-DAG: llvm.mlir.constant(2.500000e+00 : f32) : f32
// CHECK-DAG: llvm.mlir.constant(3.500000e+00 : f64) : f64
// CHECK-NOT: arith.
func.func @constants() -> (i32, index, i1, f16, bf16, f32, f64) {
  %a = arith.constant 7 : i32
  %b = arith.constant 42 : index
  %c = arith.constant true
  %d = arith.constant 1.5 : f16
  %e = arith.constant 2.0 : bf16
  %f = arith.constant 2.5 : f32
  %g = arith.constant 3.5 : f64
  func.return %a, %b, %c, %d, %e, %f, %g : i32, index, i1, f16, bf16, f32, f64
}

// CHECK-LABEL: func.func @integer_binary
// CHECK-SAME: (%[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK: llvm.add %[[A]], %[[B]] : i32
// CHECK: llvm.sub
// CHECK: llvm.mul
// CHECK: llvm.sdiv
// CHECK: llvm.udiv
// CHECK: llvm.srem
// CHECK: llvm.urem
// CHECK: llvm.and
// CHECK: llvm.or
// CHECK: llvm.xor
// CHECK: llvm.shl
// CHECK: llvm.ashr
// CHECK: llvm.lshr
// CHECK-NOT: arith.
func.func @integer_binary(%a: i32, %b: i32) -> i32 {
  %0 = arith.addi %a, %b : i32
  %1 = arith.subi %0, %b : i32
  %2 = arith.muli %1, %b : i32
  %3 = arith.divsi %2, %b : i32
  %4 = arith.divui %3, %b : i32
  %5 = arith.remsi %4, %b : i32
  %6 = arith.remui %5, %b : i32
  %7 = arith.andi %6, %b : i32
  %8 = arith.ori %7, %b : i32
  %9 = arith.xori %8, %b : i32
  %10 = arith.shli %9, %b : i32
  %11 = arith.shrsi %10, %b : i32
  %12 = arith.shrui %11, %b : i32
  func.return %12 : i32
}

// Index arithmetic works on i64; the index values are bridged by casts until reconciled.
// CHECK-LABEL: func.func @index_arith
// CHECK: %[[A64:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK: %[[B64:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK: %[[SUM:.*]] = llvm.add %[[A64]], %[[B64]] : i64
// CHECK: builtin.unrealized_conversion_cast %[[SUM]] : i64 to index
// RECONCILED-LABEL: func.func @index_arith
// RECONCILED-NOT: llvm.add
// RECONCILED: builtin.unrealized_conversion_cast %{{.*}} : index to i64
func.func @index_arith(%a: index, %b: index) -> index {
  %0 = arith.addi %a, %b : index
  func.return %0 : index
}

// Within one pass, chained ops pass llvm values directly (the casts between them reconcile).
// RECONCILED-LABEL: func.func @index_chain
// RECONCILED: %[[PRODUCT:.*]] = llvm.mul %{{.*}}, %{{.*}} : i64
// RECONCILED-NOT: unrealized_conversion_cast %[[PRODUCT]]
// RECONCILED: llvm.add %[[PRODUCT]], %{{.*}} : i64
func.func @index_chain(%a: index, %b: index) -> index {
  %0 = arith.muli %a, %b : index
  %1 = arith.addi %0, %b : index
  func.return %1 : index
}

// CHECK-LABEL: func.func @float_binary
// CHECK: llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK: llvm.fsub %{{.*}}, %{{.*}} : f32
// CHECK: llvm.fmul %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<fast>} : f32
// CHECK: llvm.fdiv
// CHECK: llvm.fneg %{{.*}} : f32
// CHECK: llvm.intr.maxnum
// CHECK: llvm.intr.minnum
// CHECK: llvm.call_intrinsic "llvm.maximum.f32"
// CHECK: llvm.call_intrinsic "llvm.minimum.f32"
// CHECK-NOT: arith.
func.func @float_binary(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  %1 = arith.subf %0, %b : f32
  %2 = arith.mulf %1, %b fastmath<fast> : f32
  %3 = arith.divf %2, %b : f32
  %4 = arith.negf %3 : f32
  %5 = arith.maxnumf %4, %b : f32
  %6 = arith.minnumf %5, %b : f32
  %7 = arith.maximumf %6, %b : f32
  %8 = arith.minimumf %7, %b : f32
  func.return %8 : f32
}

// CHECK-LABEL: func.func @compare_select
// CHECK: llvm.icmp "eq"
// CHECK: llvm.icmp "ne"
// CHECK: llvm.icmp "slt"
// CHECK: llvm.icmp "sle"
// CHECK: llvm.icmp "sgt"
// CHECK: llvm.icmp "sge"
// CHECK: llvm.icmp "ult"
// CHECK: llvm.icmp "ule"
// CHECK: llvm.icmp "ugt"
// CHECK: llvm.icmp "uge"
// CHECK: llvm.fcmp "_false"
// CHECK: llvm.fcmp "oeq"
// CHECK: llvm.fcmp "olt"
// CHECK: llvm.fcmp "une"
// CHECK: llvm.fcmp "uno"
// CHECK: llvm.fcmp "_true"
// CHECK: llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i32
// CHECK-NOT: arith.
func.func @compare_select(%a: i32, %b: i32, %x: f32, %y: f32) -> (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i32) {
  %0 = arith.cmpi eq, %a, %b : i32
  %1 = arith.cmpi ne, %a, %b : i32
  %2 = arith.cmpi slt, %a, %b : i32
  %3 = arith.cmpi sle, %a, %b : i32
  %4 = arith.cmpi sgt, %a, %b : i32
  %5 = arith.cmpi sge, %a, %b : i32
  %6 = arith.cmpi ult, %a, %b : i32
  %7 = arith.cmpi ule, %a, %b : i32
  %8 = arith.cmpi ugt, %a, %b : i32
  %9 = arith.cmpi uge, %a, %b : i32
  %10 = arith.cmpf false, %x, %y : f32
  %11 = arith.cmpf oeq, %x, %y : f32
  %12 = arith.cmpf olt, %x, %y : f32
  %13 = arith.cmpf une, %x, %y : f32
  %14 = arith.cmpf uno, %x, %y : f32
  %15 = arith.cmpf true, %x, %y : f32
  %16 = arith.select %2, %a, %b : i32
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16
    : i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i32
}

// CHECK-LABEL: func.func @integer_min_max
// CHECK: %[[C1:.*]] = llvm.icmp "sgt" %[[A:.*]], %[[B:.*]] : i32
// CHECK-NEXT: llvm.select %[[C1]], %[[A]], %[[B]] : i1, i32
// CHECK: llvm.icmp "slt"
// CHECK: llvm.icmp "ugt"
// CHECK: llvm.icmp "ult"
// CHECK-NOT: arith.
func.func @integer_min_max(%a: i32, %b: i32) -> i32 {
  %0 = arith.maxsi %a, %b : i32
  %1 = arith.minsi %0, %b : i32
  %2 = arith.maxui %1, %b : i32
  %3 = arith.minui %2, %b : i32
  func.return %3 : i32
}

// CHECK-LABEL: func.func @casts
// CHECK: llvm.sext %{{.*}} : i32 to i64
// CHECK: llvm.zext %{{.*}} : i32 to i64
// CHECK: llvm.trunc %{{.*}} : i64 to i16
// CHECK: llvm.sitofp %{{.*}} : i32 to f32
// CHECK: llvmx.uitofp %{{.*}} : i32 to f32
// CHECK: llvmx.fptosi %{{.*}} : f32 to i32
// CHECK: llvmx.fptoui %{{.*}} : f32 to i32
// CHECK: llvm.fpext %{{.*}} : f16 to f32
// CHECK: llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK: llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NOT: arith.
func.func @casts(%a: i32, %f: f32, %h: f16) -> (i64, i64, i16, f32, f32, i32, i32, f32, bf16, i32) {
  %0 = arith.extsi %a : i32 to i64
  %1 = arith.extui %a : i32 to i64
  %2 = arith.trunci %0 : i64 to i16
  %3 = arith.sitofp %a : i32 to f32
  %4 = arith.uitofp %a : i32 to f32
  %5 = arith.fptosi %f : f32 to i32
  %6 = arith.fptoui %f : f32 to i32
  %7 = arith.extf %h : f16 to f32
  %8 = arith.truncf %f : f32 to bf16
  %9 = arith.bitcast %f : f32 to i32
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : i64, i64, i16, f32, f32, i32, i32, f32, bf16, i32
}

// index_cast sign-extends or truncates against i64, or is a no-op for i64.
// RECONCILED-LABEL: func.func @index_casts
// RECONCILED-SAME: (%[[I:.*]]: index, %[[N:.*]]: i32, %[[W:.*]]: i64)
// RECONCILED: %[[I64:.*]] = builtin.unrealized_conversion_cast %[[I]] : index to i64
// RECONCILED: llvm.trunc %[[I64]] : i64 to i32
// RECONCILED: llvm.sext %[[N]] : i32 to i64
// RECONCILED-NOT: llvm.trunc
// RECONCILED-NOT: llvm.sext
// RECONCILED: func.return
func.func @index_casts(%i: index, %n: i32, %w: i64) -> (i32, index, index) {
  %0 = arith.index_cast %i : index to i32
  %1 = arith.index_cast %n : i32 to index
  %2 = arith.index_cast %w : i64 to index
  func.return %0, %1, %2 : i32, index, index
}

// floordivsi: q - 1 where the remainder is non-zero and its sign differs from the divisor's.
// CHECK-LABEL: func.func @floor_ceil_div
// CHECK: %[[Q:.*]] = llvm.sdiv %[[A:.*]], %[[B:.*]] : i32
// CHECK: %[[R:.*]] = llvm.srem %[[A]], %[[B]] : i32
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[INEXACT:.*]] = llvm.icmp "ne" %[[R]], %[[ZERO]] : i32
// CHECK: %[[RNEG:.*]] = llvm.icmp "slt" %[[R]], %[[ZERO]] : i32
// CHECK: %[[BNEG:.*]] = llvm.icmp "slt" %[[B]], %[[ZERO]] : i32
// CHECK: %[[DIFF:.*]] = llvm.icmp "ne" %[[RNEG]], %[[BNEG]] : i1
// CHECK: %[[ADJ:.*]] = llvm.and %[[INEXACT]], %[[DIFF]] : i1
// CHECK: %[[QM1:.*]] = llvm.sub %[[Q]], %[[ONE]] : i32
// CHECK: llvm.select %[[ADJ]], %[[QM1]], %[[Q]] : i1, i32
// CHECK: llvm.icmp "eq"
// CHECK: llvm.add
// CHECK: llvm.udiv
// CHECK: llvm.urem
// CHECK-NOT: arith.
func.func @floor_ceil_div(%a: i32, %b: i32) -> (i32, i32, i32) {
  %0 = arith.floordivsi %a, %b : i32
  %1 = arith.ceildivsi %a, %b : i32
  %2 = arith.ceildivui %a, %b : i32
  func.return %0, %1, %2 : i32, i32, i32
}
