// RUN: tilesync-opt %s -p convert-memref-to-llvm --split-input-file --verify-diagnostics | filecheck %s

func.func @strided(%m: memref<4x4xf32, strided<[8, 1]>>, %i: index) -> f32 {
  %v = memref.load %m[%i, %i] : memref<4x4xf32, strided<[8, 1]>>
  func.return %v : f32
}
// CHECK: memref_to_llvm_invalid.mlir:4:3: convert-memref-to-llvm: cannot lower 'memref.load': memref<4x4xf32, strided<[8, 1]>>: only identity layouts lower to bare pointers

// -----

func.func @dynamic_inner(%m: memref<4x?xf32>, %v: f32, %i: index) {
  memref.store %v, %m[%i, %i] : memref<4x?xf32>
  func.return
}
// CHECK: convert-memref-to-llvm: cannot lower 'memref.store': memref<4x?xf32>: only the leading dimension may be dynamic

// -----

func.func @heap() -> memref<16xf32> {
  %m = memref.alloc() : memref<16xf32>
  func.return %m : memref<16xf32>
}
// CHECK: memref_to_llvm_invalid.mlir:20:3: convert-memref-to-llvm: cannot lower 'memref.alloc': no heap allocation in kernels

// -----

func.func @global_alloca() -> memref<16xf32> {
  %m = memref.alloca() : memref<16xf32>
  func.return %m : memref<16xf32>
}
// CHECK: convert-memref-to-llvm: cannot lower 'memref.alloca': memref.alloca needs memory space 5 (private)

// -----

"memref.global"() <{sym_name = "table", sym_visibility = "private", type = memref<2xf32>, initial_value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> ()
// CHECK: convert-memref-to-llvm: cannot lower 'memref.global': initialized globals are not supported on the device

// -----

func.func @dim(%m: memref<?xf32>) -> index {
  %c0 = arith.constant 0 : index
  %n = memref.dim %m, %c0 : memref<?xf32>
  func.return %n : index
}
// CHECK: convert-memref-to-llvm: cannot lower 'memref.dim': no lowering for this op or its types

// -----

// CHECK: convert-memref-to-llvm: cannot lower 'memref.global': tilesync.dynamic_shared needs a shared (space 3) global
"memref.global"() {sym_name = "g", sym_visibility = "private", type = memref<4xf32, 1>, initial_value, tilesync.dynamic_shared} : () -> ()

// -----

// CHECK: convert-memref-to-llvm: cannot lower 'memref.get_global': the result type memref<32xf32, 3 : i64> is not the type memref<32xf16, 3 : i64> of global @t
"memref.global"() <{sym_name = "t", sym_visibility = "private", type = memref<32xf16, 3>, initial_value}> : () -> ()
func.func @read_as_f32() {
  %g = memref.get_global @t : memref<32xf32, 3>
  func.return
}

// -----

// CHECK: convert-memref-to-llvm: cannot lower 'memref.global': memref<32xf32, 31 : i64>: memory space 31 : i64 is not an NVPTX address space (0 generic, 1 global, 3 shared, 4 constant, 5 local)
"memref.global"() <{sym_name = "u", sym_visibility = "private", type = memref<32xf32, 31>, initial_value}> : () -> ()

// -----

// CHECK: convert-memref-to-llvm: cannot lower 'memref.get_global': @f names a 'func.func', not a global
func.func @f() {
  %g = memref.get_global @f : memref<32xf32, 3>
  func.return
}
