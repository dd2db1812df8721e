// RUN: tilesync-opt %s -p convert-memref-to-llvm | filecheck %s

// A kernel of two stages (sync-fuse-launches) runs one of them per block: each stage's dynamic
// shared globals (tilesync.shared_overlay = its index) start after the common ones, at the
// same offset, and the module needs the largest stage's bytes, not their sum:
// 256 common bytes; stage 0 from 1024 (its alignment) to 5120 + 512, stage 1 from 1024 to 9216;
// 9216 and the padding for the 1024-byte alignment at run time (1024 - 16): 10224.

// CHECK: gpu.module @m attributes {tilesync.dynamic_shared_bytes = 10224 : i64} {
"gpu.module"() ({
  "memref.global"() {sym_name = "common", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, tilesync.dynamic_shared} : () -> ()
  "memref.global"() {sym_name = "first_a", sym_visibility = "private", type = memref<2048xf16, 3>, initial_value, alignment = 1024 : i64, tilesync.dynamic_shared, tilesync.shared_overlay = 0 : i64} : () -> ()
  "memref.global"() {sym_name = "first_b", sym_visibility = "private", type = memref<128xf32, 3>, initial_value, tilesync.dynamic_shared, tilesync.shared_overlay = 0 : i64} : () -> ()
  "memref.global"() {sym_name = "second_a", sym_visibility = "private", type = memref<4096xf16, 3>, initial_value, alignment = 1024 : i64, tilesync.dynamic_shared, tilesync.shared_overlay = 1 : i64} : () -> ()

  // CHECK-LABEL: func.func @k
  // The common global first; each stage's first global at the same place, 1024 on.
  // CHECK:      llvm.mlir.addressof @__tilesync_dynamic_shared
  // CHECK-NEXT: llvm.ptrtoint
  // CHECK-NEXT: llvm.mlir.constant(0) : i64
  // CHECK-NEXT: llvm.mlir.constant(1023) : i64
  // CHECK:      builtin.unrealized_conversion_cast %{{.*}} : !llvm.ptr<3> to memref<64xf32, 3 : i64>
  // CHECK:      llvm.mlir.constant(1024) : i64
  // CHECK:      builtin.unrealized_conversion_cast %{{.*}} : !llvm.ptr<3> to memref<2048xf16, 3 : i64>
  // CHECK:      llvm.mlir.constant(5120) : i64
  // CHECK:      builtin.unrealized_conversion_cast %{{.*}} : !llvm.ptr<3> to memref<128xf32, 3 : i64>
  // CHECK:      llvm.mlir.constant(1024) : i64
  // CHECK:      builtin.unrealized_conversion_cast %{{.*}} : !llvm.ptr<3> to memref<4096xf16, 3 : i64>
  func.func @k(%i: index, %x: f32, %h: f16) {
    %c = memref.get_global @common : memref<64xf32, 3>
    %a = memref.get_global @first_a : memref<2048xf16, 3>
    %b = memref.get_global @first_b : memref<128xf32, 3>
    %d = memref.get_global @second_a : memref<4096xf16, 3>
    memref.store %x, %c[%i] : memref<64xf32, 3>
    memref.store %h, %a[%i] : memref<2048xf16, 3>
    memref.store %x, %b[%i] : memref<128xf32, 3>
    memref.store %h, %d[%i] : memref<4096xf16, 3>
    func.return
  }
}) {sym_name = "m"} : () -> ()
