// RUN: tilesync-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @bytes_not_16(%g: memref<?xi128>, %s: memref<1024xi128, 3>, %b: memref<1xi64, 3>, %i: index) {
  tile.bulk_load %s[%i], %g[%i], %b[%i] bytes 100 : memref<1024xi128, 3>, memref<?xi128>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.bulk_load' bytes must be a positive multiple of 16, got 100

// -----

func.func @bytes_zero(%g: memref<?xi128>, %s: memref<1024xi128, 3>, %i: index) {
  tile.bulk_store %g[%i], %s[%i] bytes 0 : memref<?xi128>, memref<1024xi128, 3>
  func.return
}
// CHECK: 'tile.bulk_store' bytes must be a positive multiple of 16, got 0

// -----

func.func @does_not_fit(%g: memref<?xi128>, %s: memref<1024xi128, 3>, %i: index) {
  tile.bulk_store %g[%i], %s[%i] bytes 32768 : memref<?xi128>, memref<1024xi128, 3>
  func.return
}
// CHECK: 'tile.bulk_store' 32768 bytes do not fit the source memref<1024xi128, 3 : i64> (16384 bytes)

// -----

func.func @shared_in_global(%g: memref<?xi128>, %s: memref<1024xi128>, %b: memref<1xi64, 3>, %i: index) {
  tile.bulk_load %s[%i], %g[%i], %b[%i] bytes 16 : memref<1024xi128>, memref<?xi128>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.bulk_load' destination must be a static memref in shared memory (memory space 3), got memref<1024xi128>

// -----

func.func @global_in_shared(%g: memref<64xi128, 3>, %s: memref<1024xi128, 3>, %i: index) {
  tile.bulk_store %g[%i], %s[%i] bytes 16 : memref<64xi128, 3>, memref<1024xi128, 3>
  func.return
}
// CHECK: 'tile.bulk_store' destination must be in global memory, got memref<64xi128, 3 : i64>

// -----

func.func @element_types(%g: memref<?xf32>, %s: memref<1024xi128, 3>, %i: index) {
  tile.bulk_store %g[%i], %s[%i] bytes 16 : memref<?xf32>, memref<1024xi128, 3>
  func.return
}
// CHECK: 'tile.bulk_store' element types differ: i128 and f32

// -----

func.func @barrier_in_global(%g: memref<?xi128>, %s: memref<1024xi128, 3>, %b: memref<1xi64>, %i: index) {
  tile.bulk_load %s[%i], %g[%i], %b[%i] bytes 16 : memref<1024xi128, 3>, memref<?xi128>, memref<1xi64>
  func.return
}
// CHECK: 'tile.bulk_load' barriers must be a static memref of i64 in shared memory (memory space 3), got memref<1xi64>

// -----

func.func @indices(%g: memref<?xi128>, %s: memref<1024xi128, 3>, %i: index) {
  tile.bulk_store %g[%i, %i], %s[%i] bytes 16 : memref<?xi128>, memref<1024xi128, 3>
  func.return
}
// CHECK: 'tile.bulk_store' destination needs 1 indices, got 2
