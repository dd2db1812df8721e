// RUN: tilesync-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @rows_not_128_bytes(%a: memref<128x32xf16, 3>, %b: memref<16x64xf16, 3>, %i: index,
                              %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.wgmma %a[%i, %i], %b[%i, %i], %c : memref<128x32xf16, 3>, memref<16x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma' A rows must be 128 bytes (K-major, 128-byte swizzle), got memref<128x32xf16, 3 : i64>

// -----

func.func @b_in_global(%a: memref<128x64xf16, 3>, %b: memref<16x64xf16>, %i: index,
                       %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.wgmma %a[%i, %i], %b[%i, %i], %c : memref<128x64xf16, 3>, memref<16x64xf16>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma' B must be in shared memory (memory space 3), got memref<16x64xf16>

// -----

func.func @mixed_types(%a: memref<128x64xf16, 3>, %b: memref<16x64xbf16, 3>, %i: index,
                       %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.wgmma %a[%i, %i], %b[%i, %i], %c : memref<128x64xf16, 3>, memref<16x64xbf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma' A and B must have the same element type

// -----

func.func @f32_operands(%a: memref<128x32xf32, 3>, %b: memref<16x32xf32, 3>, %i: index,
                        %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.wgmma %a[%i, %i], %b[%i, %i], %c : memref<128x32xf32, 3>, memref<16x32xf32, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma' multiplies f16 or bf16, got f32

// -----

func.func @missing_index(%a: memref<128x64xf16, 3>, %b: memref<16x64xf16, 3>, %i: index,
                         %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.wgmma %a[%i], %b[%i, %i], %c : memref<128x64xf16, 3>, memref<16x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma' A needs 2 indices, got 1

// -----

func.func @bad_wait() {
  tile.wgmma_wait 9
  func.return
}
// CHECK: 'tile.wgmma_wait' pending must be in 0..7, got 9

// -----

func.func @n_major_b_wider_than_its_atoms(%a: memref<64x64xf16, 3>, %b: memref<1x64x64xf16, 3>,
                                          %i: index, %c: !tile.frag<acc, f32, m16n8k16>) {
  %d:9 = tile.wgmma %a[%i, %i], %b[%i, %i, %i] trans_b, %c, %c, %c, %c, %c, %c, %c, %c, %c : memref<64x64xf16, 3>, memref<1x64x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma' trans_b reads N in atoms of 64 columns: N = 72 needs 2, B holds 1 (memref<1x64x64xf16, 3 : i64>)
