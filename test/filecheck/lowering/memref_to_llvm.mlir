// RUN: tilesync-opt %s -p convert-memref-to-llvm | filecheck %s
// RUN: tilesync-opt %s -p convert-memref-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s --check-prefix=FULL

// xDSL 0.74 has no custom syntax for memref.global and memref.cast: generic form.

// Shared memory: internal, uninitialized, 16-byte aligned, flattened to an array.
// CHECK: llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
"memref.global"() <{sym_name = "tile", sym_visibility = "private", type = memref<16x16xf32, 3>, initial_value}> : () -> ()

// CHECK-LABEL: func.func @rank1
// CHECK: %[[P:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<4096xf32> to !llvm.ptr<1>
// CHECK: %[[I:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK: %[[ADDR:.*]] = llvm.getelementptr inbounds %[[P]][%[[I]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: llvm.load %[[ADDR]] {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK: llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK-NOT: memref.load
// CHECK-NOT: memref.store
func.func @rank1(%a: memref<4096xf32>, %b: memref<?xi32>, %i: index, %j: index) -> f32 {
  %v = memref.load %a[%i] : memref<4096xf32>
  %w = memref.load %b[%j] : memref<?xi32>
  memref.store %w, %b[%i] : memref<?xi32>
  func.return %v : f32
}

// Row-major linearization: i*128 + j*16 + k.
// FULL-LABEL: llvm.func @rank3
// FULL-SAME: (%[[C:.*]]: !llvm.ptr<1>, %[[I:.*]]: i64, %[[J:.*]]: i64, %[[K:.*]]: i64) -> f16
// FULL: %[[S0:.*]] = llvm.mlir.constant(128) : i64
// FULL: %[[T0:.*]] = llvm.mul %[[I]], %[[S0]] : i64
// FULL: %[[S1:.*]] = llvm.mlir.constant(16) : i64
// FULL: %[[T1:.*]] = llvm.mul %[[J]], %[[S1]] : i64
// FULL: %[[T01:.*]] = llvm.add %[[T0]], %[[T1]] : i64
// FULL: %[[LIN:.*]] = llvm.add %[[T01]], %[[K]] : i64
// FULL: %[[ADDR:.*]] = llvm.getelementptr inbounds %[[C]][%[[LIN]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// FULL: llvm.load %[[ADDR]] {alignment = 2 : i64} : !llvm.ptr<1> -> f16
// FULL-NOT: unrealized_conversion_cast
func.func @rank3(%c: memref<4x8x16xf16>, %i: index, %j: index, %k: index) -> f16 {
  %h = memref.load %c[%i, %j, %k] : memref<4x8x16xf16>
  func.return %h : f16
}

// A leading dynamic dimension keeps static strides.
// FULL-LABEL: llvm.func @leading_dynamic
// FULL: llvm.mlir.constant(64) : i64
// FULL: llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// FULL: llvm.store %{{.*}}, %{{.*}} {alignment = 1 : i64} : i8, !llvm.ptr<1>
func.func @leading_dynamic(%m: memref<?x64xi8>, %i: index, %j: index, %v: i8) {
  memref.store %v, %m[%i, %j] : memref<?x64xi8>
  func.return
}

// CHECK-LABEL: func.func @shared_and_private
// CHECK: %[[TILE:.*]] = llvm.mlir.addressof @tile : !llvm.ptr<3>
// CHECK: llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<3>
// CHECK: %[[N:.*]] = llvm.mlir.constant(8) : i64
// CHECK: %[[STACK:.*]] = llvm.alloca %[[N]] x f32 {alignment = 4 : i64} : (i64) -> !llvm.ptr
// CHECK: llvmx.addrspacecast %[[STACK]] : !llvm.ptr to !llvm.ptr<5>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<5>
// CHECK-NOT: memref.get_global
// CHECK-NOT: memref.alloca
// FULL-LABEL: llvm.func @shared_and_private
// FULL: %[[TILE:.*]] = llvm.mlir.addressof @tile : !llvm.ptr<3>
// FULL: llvm.getelementptr inbounds %[[TILE]]
func.func @shared_and_private(%v: f32, %i: index, %j: index) {
  %t = memref.get_global @tile : memref<16x16xf32, 3>
  memref.store %v, %t[%i, %j] : memref<16x16xf32, 3>
  %p = memref.alloca() : memref<8xf32, 5>
  memref.store %v, %p[%j] : memref<8xf32, 5>
  func.return
}

// memref.cast to a dynamic shape is the same pointer.
// FULL-LABEL: llvm.func @cast
// FULL-SAME: (%[[A:.*]]: !llvm.ptr<1>, %[[I:.*]]: i64)
// FULL-NEXT: llvm.getelementptr inbounds %[[A]][%[[I]]]
func.func @cast(%a: memref<4096xf32>, %i: index) -> f32 {
  %d = "memref.cast"(%a) : (memref<4096xf32>) -> memref<?xf32>
  %e = memref.load %d[%i] : memref<?xf32>
  func.return %e : f32
}

// Rank 0: the pointer itself.
// FULL-LABEL: llvm.func @rank0
// FULL-SAME: (%[[S:.*]]: !llvm.ptr<1>)
// FULL-NEXT: llvm.load %[[S]] {alignment = 8 : i64} : !llvm.ptr<1> -> i64
func.func @rank0(%s: memref<index>) -> index {
  %x = memref.load %s[] : memref<index>
  func.return %x : index
}
