// RUN: tilesync-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @bad_role(%v: f32) {
  %z = tile.fill %v : f32 -> !tile.frag<c, f32, m16n8k16>
  func.return
}
// CHECK: !tile.frag role must be one of a, b, acc, got 'c'

// -----

func.func @bad_shape(%v: f32) {
  %z = tile.fill %v : f32 -> !tile.frag<acc, f32, m16n8k8>
  func.return
}
// CHECK: !tile.frag shape must be one of m16n8k16, got 'm16n8k8'

// -----

func.func @acc_f16(%v: f16) {
  %z = tile.fill %v : f16 -> !tile.frag<acc, f16, m16n8k16>
  func.return
}
// CHECK: !tile.frag<acc> accumulates in f32, got f16

// -----

func.func @a_f32(%s: memref<16x16xf32, 3>, %i: index) {
  %a = tile.ldmatrix %s[%i, %i] : memref<16x16xf32, 3> -> !tile.frag<a, f32, m16n8k16>
  func.return
}
// CHECK: !tile.frag<a> holds f16 or bf16, got f32

// -----

func.func @fill_a(%v: f32) {
  %z = tile.fill %v : f32 -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.fill' fills accumulator fragments only

// -----

func.func @ldmatrix_global(%g: memref<16x16xf16>, %i: index) {
  %a = tile.ldmatrix %g[%i, %i] : memref<16x16xf16> -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.ldmatrix' source must be in shared memory (memory space 3), got memref<16x16xf16>

// -----

func.func @ldmatrix_two_a(%s: memref<16x16xf16, 3>, %i: index) {
  %a, %b = tile.ldmatrix %s[%i, %i] : memref<16x16xf16, 3> -> !tile.frag<a, f16, m16n8k16>, !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.ldmatrix' loads one A fragment, one B fragment or two B fragments, got (a, a)

// -----

func.func @ldmatrix_type(%s: memref<16x16xbf16, 3>, %i: index) {
  %a = tile.ldmatrix %s[%i, %i] : memref<16x16xbf16, 3> -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.ldmatrix' fragment !tile.frag<a, f16, m16n8k16> does not match the element type bf16 of the source

// -----

func.func @ldmatrix_indices(%s: memref<2x16x16xf16, 3>, %i: index) {
  %a = tile.ldmatrix %s[%i, %i] : memref<2x16x16xf16, 3> -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.ldmatrix' source needs 3 indices, got 2

// -----

func.func @ldmatrix_split_chunks(%s: memref<16x16xf16, 3>, %i: index) {
  %a = tile.ldmatrix %s[%i, %i] swizzle #tile.swizzle<2, 2, 3> : memref<16x16xf16, 3> -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.ldmatrix' swizzle #tile.swizzle<2, 2, 3> would split 16-byte chunks (needs M >= 3)

// -----

func.func @swizzle_not_bijective(%s: memref<16x16xf16, 3>, %i: index) {
  %a = tile.ldmatrix %s[%i, %i] swizzle #tile.swizzle<3, 3, 2> : memref<16x16xf16, 3> -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: #tile.swizzle<3, 3, 2> needs B >= 0, M >= 0 and S >= B (a bijection)

// -----

func.func @mma_roles(%a: !tile.frag<a, f16, m16n8k16>, %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.mma %a, %a, %c : !tile.frag<a, f16, m16n8k16>, !tile.frag<a, f16, m16n8k16>, !tile.frag<acc, f32, m16n8k16> -> !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.mma' takes fragments of roles (a, b, acc), got (a, a, acc)

// -----

func.func @mma_mixed(%a: !tile.frag<a, f16, m16n8k16>, %b: !tile.frag<b, bf16, m16n8k16>, %c: !tile.frag<acc, f32, m16n8k16>) {
  %d = tile.mma %a, %b, %c : !tile.frag<a, f16, m16n8k16>, !tile.frag<b, bf16, m16n8k16>, !tile.frag<acc, f32, m16n8k16> -> !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.mma' A and B must have the same element type, got f16 and bf16

// -----

func.func @cp_async_to_global(%d: memref<16x16xf16>, %g: memref<16x16xf16>, %i: index) {
  tile.cp_async %d[%i, %i], %g[%i, %i] : memref<16x16xf16>, memref<16x16xf16>
  func.return
}
// CHECK: 'tile.cp_async' destination must be in shared memory (memory space 3), got memref<16x16xf16>

// -----

func.func @cp_async_unaligned_rows(%d: memref<16x16xf16, 3>, %g: memref<16x12xf16>, %i: index) {
  tile.cp_async %d[%i, %i], %g[%i, %i] : memref<16x16xf16, 3>, memref<16x12xf16>
  func.return
}
// CHECK: 'tile.cp_async' source rows must be a multiple of 8 elements (16-byte aligned), got 12

// -----

func.func @cp_async_masked_dynamic(%d: memref<16x16xf16, 3>, %g: memref<?x16xf16>, %i: index) {
  tile.cp_async %d[%i, %i], %g[%i, %i] masked : memref<16x16xf16, 3>, memref<?x16xf16>
  func.return
}
// CHECK: 'tile.cp_async' masked needs a static source shape, got memref<?x16xf16>

// -----

func.func @cp_async_types(%d: memref<16x16xf16, 3>, %g: memref<16x16xbf16>, %i: index) {
  tile.cp_async %d[%i, %i], %g[%i, %i] : memref<16x16xf16, 3>, memref<16x16xbf16>
  func.return
}
// CHECK: 'tile.cp_async' element types differ: f16 and bf16

// -----

func.func @wait_too_many() {
  tile.cp_async_wait 8
  func.return
}
// CHECK: 'tile.cp_async_wait' pending must be in 0..7, got 8

// -----

func.func @store_epilogue_args(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<16x16xf16>, %i: index) {
  tile.store_acc %c, %C[%i, %i] epilogue {
  ^bb0(%v: f32):
    tile.yield %v : f32
  } : !tile.frag<acc, f32, m16n8k16>, memref<16x16xf16>
  func.return
}
// CHECK: 'tile.store_acc' epilogue block takes (f32, index, index) (the value of each accumulator, row, column), got (f32)

// -----

func.func @store_int(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<16x16xi32>, %i: index) {
  tile.store_acc %c, %C[%i, %i] : !tile.frag<acc, f32, m16n8k16>, memref<16x16xi32>
  func.return
}
// CHECK: 'tile.store_acc' stores f16, bf16 or f32, got i32

// -----

func.func @yield_outside(%v: f32) {
  tile.yield %v : f32
}
// CHECK: 'tile.yield' expects parent op 'tile.store_acc'

// -----

func.func @two_accs_no_epilogue(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<16x16xf16>, %i: index) {
  tile.store_acc %c, %c, %C[%i, %i] : !tile.frag<acc, f32, m16n8k16>, !tile.frag<acc, f32, m16n8k16>, memref<16x16xf16>
  func.return
}
// CHECK: 'tile.store_acc' with several accumulators needs an epilogue combining them

// -----

func.func @reduce_f16(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<16x16xf16>, %i: index) {
  tile.store_acc %c, %C[%i, %i] reduce : !tile.frag<acc, f32, m16n8k16>, memref<16x16xf16>
  func.return
}
// CHECK: 'tile.store_acc' reduce adds into f32 only, got f16

// -----

func.func @staging_at_one(%c: !tile.frag<acc, f32, m16n8k16>, %S: memref<64x64xf16, 3>, %i: index) {
  tile.store_acc %c, %S[%i, %i] at [%i] : !tile.frag<acc, f32, m16n8k16>, memref<64x64xf16, 3>
  func.return
}
// CHECK: 'tile.store_acc' at takes the (row, column) of the fragment in the output, got 1 values

// -----

func.func @arrive_zero(%cnt: memref<4xi32>, %i: index) {
  %l = tile.arrive %cnt[%i] of 0 : memref<4xi32>
  func.return
}
// CHECK: 'tile.arrive' expects at least 1 arrival

// -----

func.func @arrive_part_of_a_warp(%cnt: memref<4xi32>, %i: index) {
  %l = tile.arrive %cnt[%i] by %i of 8 threads 48 : memref<4xi32>
  func.return
}
// CHECK: 'tile.arrive' threads counts whole warps (a multiple of 32 up to 1024), got 48

// -----

func.func @shuffle_offset(%x: f32) {
  %s = tile.shuffle bfly %x, 32 : f32
  func.return
}
// CHECK: 'tile.shuffle' offset must be in 0..31

// -----

func.func @take_acc_type(%ws: memref<64x128xf32>, %i: index) {
  %t = tile.take_acc %ws[%i, %i] : memref<64x128xf32> -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.take_acc' yields !tile.frag<acc, f32, m16n8k16>, got !tile.frag<a, f16, m16n8k16>

// -----

func.func @swizzle_too_wide(%s: memref<16x16xf16, 3>, %i: index) {
  %a = tile.ldmatrix %s[%i, %i] swizzle #tile.swizzle<3, 4294967296, 4294967296> : memref<16x16xf16, 3> -> !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: #tile.swizzle<3, 4294967296, 4294967296> needs B + M <= 31 and S <= 31 (offsets are 32-bit)

// -----

func.func @epilogue_blocks(%c: !tile.frag<acc, f32, m16n8k16>, %C: memref<64x64xf32>, %i: index, %j: index) {
  tile.store_acc %c, %C[%i, %j] epilogue {
  ^bb0(%v: f32, %row: index, %col: index):
    tile.yield %v : f32
  ^bb1(%w: f32, %r: index, %q: index):
    tile.yield %w : f32
  } : !tile.frag<acc, f32, m16n8k16>, memref<64x64xf32>
  func.return
}
// CHECK: 'tile.store_acc' epilogue must be a single block

// -----

func.func @copy_out_from_global(%g: memref<16x16xf16>, %s: memref<16x16xf16>, %i: index) {
  tile.copy_out %g[%i, %i], %s[%i, %i] : memref<16x16xf16>, memref<16x16xf16>
  func.return
}
// CHECK: 'tile.copy_out' source must be in shared memory (memory space 3), got memref<16x16xf16>

// -----

func.func @copy_out_to_shared(%d: memref<16x16xf16, 3>, %s: memref<16x16xf16, 3>, %i: index) {
  tile.copy_out %d[%i, %i], %s[%i, %i] : memref<16x16xf16, 3>, memref<16x16xf16, 3>
  func.return
}
// CHECK: 'tile.copy_out' destination must be in global memory, got memref<16x16xf16, 3 : i64>

// -----

func.func @copy_out_unaligned_rows(%d: memref<16x12xf16>, %s: memref<16x16xf16, 3>, %i: index) {
  tile.copy_out %d[%i, %i], %s[%i, %i] : memref<16x12xf16>, memref<16x16xf16, 3>
  func.return
}
// CHECK: 'tile.copy_out' destination rows must be a multiple of 8 elements (16-byte aligned), got 12

// -----

func.func @take_peer_global(%W: memref<16x16xf32>, %i: index) {
  %t = tile.take_acc %W[%i, %i] cta %i : memref<16x16xf32> -> !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.take_acc' cta reads a peer CTA's shared memory, got memref<16x16xf32>

// -----

func.func @take_shared_masked(%B: memref<16x16xf32, 3>, %i: index) {
  %t = tile.take_acc %B[%i, %i] masked : memref<16x16xf32, 3> -> !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.take_acc' masked reads a global workspace; a shared buffer holds the whole tile

// -----

func.func @add_a_operands(%a: !tile.frag<a, f16, m16n8k16>) {
  %s = tile.add_acc %a, %a : !tile.frag<a, f16, m16n8k16>
  func.return
}
// CHECK: 'tile.add_acc' adds two !tile.frag<acc, f32, m16n8k16>, got !tile.frag<a, f16, m16n8k16>, !tile.frag<a, f16, m16n8k16> -> !tile.frag<a, f16, m16n8k16>

// -----

func.func @packed_rows(%c: !tile.frag<acc, f32, m16n8k16>, %W: memref<64x128xf32>, %i: index) {
  tile.store_acc %c, %W[%i, %i] packed : !tile.frag<acc, f32, m16n8k16>, memref<64x128xf32>
  func.return
}
// CHECK: 'tile.store_acc' packed needs f32 blocks of 16x8 (the memref's last two dimensions), got memref<64x128xf32>

// -----

func.func @packed_reduce(%c: !tile.frag<acc, f32, m16n8k16>, %W: memref<4x16x8xf32>, %i: index) {
  %z = arith.constant 0 : index
  tile.store_acc %c, %W[%i, %z, %z] reduce packed : !tile.frag<acc, f32, m16n8k16>, memref<4x16x8xf32>
  func.return
}
// CHECK: 'tile.store_acc' packed stores one fragment as it is: no masked, reduce, at or epilogue

// -----

func.func @packed_inside_a_block(%W: memref<4x16x8xf32>, %i: index) {
  %eight = arith.constant 8 : index
  %z = arith.constant 0 : index
  %t = tile.take_acc %W[%i, %eight, %z] keep packed : memref<4x16x8xf32> -> !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.take_acc' packed addresses a whole block: its last two indices are 0

// -----

func.func @packed_f16(%W: memref<4x16x8xf16>, %i: index) {
  %z = arith.constant 0 : index
  %t = tile.take_acc %W[%i, %z, %z] packed : memref<4x16x8xf16> -> !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.take_acc' reads f32, got f16

// -----

func.func @packed_shared(%W: memref<4x16x8xf32, 3>, %i: index) {
  %z = arith.constant 0 : index
  %t = tile.take_acc %W[%i, %z, %z] packed : memref<4x16x8xf32, 3> -> !tile.frag<acc, f32, m16n8k16>
  func.return
}
// CHECK: 'tile.take_acc' packed reads a whole block of a global workspace: not masked, not shared memory

// -----

func.func @load_l2_narrow(%m: memref<8xi64>, %i: index) {
  %v = tile.load_l2 %m[%i] : memref<8xi64> -> i64
  func.return
}
// CHECK: 'tile.load_l2' reads a 16-byte element (i128) as an i128, got memref<8xi64> -> i64

// -----

func.func @load_l2_other_type(%m: memref<8xi128>, %i: index) {
  %v = tile.load_l2 %m[%i] : memref<8xi128> -> i64
  func.return
}
// CHECK: 'tile.load_l2' reads a 16-byte element (i128) as an i128, got memref<8xi128> -> i64

// -----

func.func @load_l2_shared(%m: memref<8xi128, 3>, %i: index) {
  %v = tile.load_l2 %m[%i] : memref<8xi128, 3> -> i128
  func.return
}
// CHECK: 'tile.load_l2' reads global memory, got memref<8xi128, 3 : i64>

// -----

func.func @cluster_map_of_global(%m: memref<64xi128>, %c: index) {
  %0 = tile.cluster_map %m cta %c : memref<64xi128> -> memref<64xi128, 0 : i64>
  func.return
}
// CHECK: 'tile.cluster_map' maps a shared-memory buffer, got memref<64xi128>

// -----

func.func @cluster_map_to_shared(%m: memref<64xi128, 3 : i64>, %c: index) {
  %0 = tile.cluster_map %m cta %c : memref<64xi128, 3 : i64> -> memref<64xi128, 3 : i64>
  func.return
}
// CHECK: 'tile.cluster_map' yields the buffer's shape and element type in memory space 0 (generic), got memref<64xi128, 3 : i64> for memref<64xi128, 3 : i64>
