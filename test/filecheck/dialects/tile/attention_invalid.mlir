// RUN: tilesync-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @unpack_an_a_fragment(%a: !tile.frag<a, f16, m16n8k16>) {
  %c:4 = tile.unpack_acc %a : !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.unpack_acc' reads an !tile.frag<acc, f32, m16n8k16>, got !tile.frag<a, f16, m16n8k16>

// -----

func.func @pack_into_a_b_fragment(%f: f32) {
  %b = tile.pack_acc %f, %f, %f, %f : !tile.frag<b, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.pack_acc' builds an !tile.frag<acc, f32, m16n8k16>, got !tile.frag<b, f16, m16n8k16>

// -----

func.func @acc_to_b(%c: !tile.frag<acc, f32, m16n8k16>) {
  %b = "tile.acc_to_a"(%c, %c) : (!tile.frag<acc, f32, m16n8k16>, !tile.frag<acc, f32, m16n8k16>) -> !tile.frag<b, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.acc_to_a' yields an A fragment, got !tile.frag<b, f16, m16n8k16>

// -----

func.func @acc_to_a_of_a(%a: !tile.frag<a, f16, m16n8k16>) {
  %b = tile.acc_to_a %a, %a : !tile.frag<a, f16, m16n8k16> -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.acc_to_a' reads two !tile.frag<acc, f32, m16n8k16>, got !tile.frag<a, f16, m16n8k16> and !tile.frag<a, f16, m16n8k16>

// -----

func.func @fence_retypes(%c: !tile.frag<acc, f32, m16n8k16>) {
  %d = "tile.wgmma_fence"(%c) : (!tile.frag<acc, f32, m16n8k16>) -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma_fence' results must have its operands' types

// -----

func.func @reg_a_b_fragment(%b: !tile.frag<b, f16, m16n8k16>, %v: memref<64x64xf16, 3>, %i: index,
                            %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.wgmma_reg_a %b, %v[%i, %i], %c : !tile.frag<b, f16, m16n8k16>, memref<64x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma_reg_a' takes an A fragment, got !tile.frag<b, f16, m16n8k16>

// -----

func.func @reg_a_mixed_types(%a: !tile.frag<a, bf16, m16n8k16>, %v: memref<64x64xf16, 3>,
                             %i: index, %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.wgmma_reg_a %a, %v[%i, %i], %c : !tile.frag<a, bf16, m16n8k16>, memref<64x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma_reg_a' A and B must have the same element type

// -----

func.func @reg_a_trans_b_wider_than_a_row(%a: !tile.frag<a, f16, m16n8k16>,
                                          %v: memref<64x64xf16, 3>, %i: index,
                                          %c: !tile.frag<acc, f32, m16n8k16>) {
  %d:9 = tile.wgmma_reg_a %a, %v[%i, %i] trans_b, %c, %c, %c, %c, %c, %c, %c, %c, %c : !tile.frag<a, f16, m16n8k16>, memref<64x64xf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma_reg_a' takes 1 to 8 accumulators (N = 8 .. 64; trans_b reads one 128-byte row of N), got 9

// -----

func.func @reg_a_global_b(%a: !tile.frag<a, f16, m16n8k16>, %v: memref<64x64xf16>, %i: index,
                          %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.wgmma_reg_a %a, %v[%i, %i], %c : !tile.frag<a, f16, m16n8k16>, memref<64x64xf16>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.wgmma_reg_a' B must be in shared memory (memory space 3), got memref<64x64xf16>
