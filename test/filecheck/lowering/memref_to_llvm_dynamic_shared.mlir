// RUN: tilesync-opt %s -p convert-memref-to-llvm | filecheck %s
// RUN: tilesync-opt %s -p convert-memref-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts -t llvm | filecheck %s --check-prefix=LLVM

// Globals marked tilesync.dynamic_shared are packed, in order and at their alignment, into
// the module's one extern shared array; static shared globals stay as they are. The array is
// only 16-byte aligned (it follows the static shared memory), so a 1024-byte alignment is made
// at run time (pad = -address & 1023) and the launch size has room for it:
// 65536 + 400 + 1024 - 16 = 66944 bytes.

// CHECK: gpu.module @m attributes {tilesync.dynamic_shared_bytes = 66944 : i64} {
// CHECK-NEXT: llvm.mlir.global external @__tilesync_dynamic_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-NOT: @stages
// CHECK-NOT: @partials
// CHECK: llvm.mlir.global internal @slot() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1 x i32>
// LLVM: @"__tilesync_dynamic_shared" = external addrspace(3) global [0 x i8], align 16
// LLVM: @"slot" = internal addrspace(3) global [1 x i32] undef, align 16
"gpu.module"() ({
  "memref.global"() {sym_name = "stages", sym_visibility = "private", type = memref<4x128x64xf16, 3>, initial_value, alignment = 1024 : i64, tilesync.dynamic_shared} : () -> ()
  "memref.global"() {sym_name = "partials", sym_visibility = "private", type = memref<100xf32, 3>, initial_value, alignment = 64 : i64, tilesync.dynamic_shared} : () -> ()
  "memref.global"() {sym_name = "slot", sym_visibility = "private", type = memref<1xi32, 3>, initial_value} : () -> ()

  // CHECK-LABEL: func.func @k
  // The first global sits at the array's first 1024-aligned byte, the second 65536 bytes on.
  // CHECK: %[[BASE:.*]] = llvm.mlir.addressof @__tilesync_dynamic_shared : !llvm.ptr<3>
  // CHECK-NEXT: %[[ADDR:.*]] = llvm.ptrtoint %[[BASE]] : !llvm.ptr<3> to i64
  // CHECK-NEXT: %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
  // CHECK-NEXT: %[[MASK:.*]] = llvm.mlir.constant(1023) : i64
  // CHECK-NEXT: %[[NEG:.*]] = llvm.sub %[[ZERO]], %[[ADDR]] : i64
  // CHECK-NEXT: %[[PAD:.*]] = llvm.and %[[NEG]], %[[MASK]] : i64
  // CHECK-NEXT: %[[A:.*]] = llvm.getelementptr inbounds %[[BASE]][%[[PAD]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
  // CHECK-NEXT: builtin.unrealized_conversion_cast %[[A]] : !llvm.ptr<3> to memref<4x128x64xf16, 3 : i64>
  // CHECK: %[[OFF:.*]] = llvm.mlir.constant(65536) : i64
  // CHECK: %[[PAD2:.*]] = llvm.and
  // CHECK-NEXT: %[[AT:.*]] = llvm.add %[[PAD2]], %[[OFF]] : i64
  // CHECK-NEXT: llvm.getelementptr inbounds %{{.*}}[%[[AT]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
  // CHECK: llvm.mlir.addressof @slot : !llvm.ptr<3>
  func.func @k(%i: index) {
    %a = memref.get_global @stages : memref<4x128x64xf16, 3>
    %b = memref.get_global @partials : memref<100xf32, 3>
    %s = memref.get_global @slot : memref<1xi32, 3>
    %x = memref.load %a[%i, %i, %i] : memref<4x128x64xf16, 3>
    %f = arith.extf %x : f16 to f32
    memref.store %f, %b[%i] : memref<100xf32, 3>
    %c = arith.constant 0 : i32
    memref.store %c, %s[%i] : memref<1xi32, 3>
    func.return
  }
}) {sym_name = "m"} : () -> ()
