// RUN: tilesync-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @box_too_large(%m: !tile.tensor_map<512x64xf16, swizzle 128>) {
  func.return
}
// CHECK: !tile.tensor_map box dimensions must be in 1..256, got [512, 64]

// -----

func.func @rows_wider_than_swizzle(%m: !tile.tensor_map<64x128xf16, swizzle 128>) {
  func.return
}
// CHECK: !tile.tensor_map inner box dimension is 256 bytes: it must be a multiple of 16 and at most the 128-byte swizzle span

// -----

func.func @bad_swizzle(%m: !tile.tensor_map<64x64xf16, swizzle 96>) {
  func.return
}
// CHECK: !tile.tensor_map swizzle must be one of 0, 32, 64, 128, got 96

// -----

func.func @int_elements(%m: !tile.tensor_map<64x64xi16, swizzle 128>) {
  func.return
}
// CHECK: !tile.tensor_map holds f16, bf16 or f32, got i16

// -----

func.func @load_wrong_rank(%m: !tile.tensor_map<64x64xf16, swizzle 128>, %s: memref<64x64xf16, 3>,
                           %b: memref<1xi64, 3>, %i: index) {
  tile.tma_load %m[%i], %s[%i, %i], %b[%i] : !tile.tensor_map<64x64xf16, swizzle 128>, memref<64x64xf16, 3>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.tma_load' a box of rank 2 takes 2 coordinates, got 1

// -----

func.func @load_to_global(%m: !tile.tensor_map<64x64xf16, swizzle 128>, %s: memref<64x64xf16>,
                          %b: memref<1xi64, 3>, %i: index) {
  tile.tma_load %m[%i, %i], %s[%i, %i], %b[%i] : !tile.tensor_map<64x64xf16, swizzle 128>, memref<64x64xf16>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.tma_load' destination must be in shared memory (memory space 3), got memref<64x64xf16>

// -----

func.func @load_box_does_not_fit(%m: !tile.tensor_map<64x64xf16, swizzle 128>, %s: memref<32x64xf16, 3>,
                                 %b: memref<1xi64, 3>, %i: index) {
  tile.tma_load %m[%i, %i], %s[%i, %i], %b[%i] : !tile.tensor_map<64x64xf16, swizzle 128>, memref<32x64xf16, 3>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.tma_load' destination memref<32x64xf16, 3 : i64> cannot hold the box 64x64 in its trailing dimensions

// -----

func.func @load_element_type(%m: !tile.tensor_map<64x64xf16, swizzle 128>, %s: memref<64x64xbf16, 3>,
                             %b: memref<1xi64, 3>, %i: index) {
  tile.tma_load %m[%i, %i], %s[%i, %i], %b[%i] : !tile.tensor_map<64x64xf16, swizzle 128>, memref<64x64xbf16, 3>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.tma_load' destination element type bf16 is not the tensor map's f16

// -----

func.func @barrier_i32(%b: memref<4xi32, 3>, %i: index) {
  tile.mbarrier_init %b[%i] count 1 : memref<4xi32, 3>
  func.return
}
// CHECK: 'tile.mbarrier_init' barriers must be a static memref of i64 in shared memory (memory space 3), got memref<4xi32, 3 : i64>

// -----

func.func @barrier_count(%b: memref<4xi64, 3>, %i: index) {
  tile.mbarrier_init %b[%i] count 0 : memref<4xi64, 3>
  func.return
}
// CHECK: 'tile.mbarrier_init' count must be in 1..2^20-1, got 0

// -----

func.func @expect_nothing(%b: memref<4xi64, 3>, %i: index) {
  tile.mbarrier_arrive %b[%i] expect_tx 0 : memref<4xi64, 3>
  func.return
}
// CHECK: 'tile.mbarrier_arrive' expect_tx must be in 1..2^20-1 bytes, got 0

// -----

func.func @named_barrier_zero() {
  tile.named_barrier 0, 128
  func.return
}
// CHECK: 'tile.named_barrier' id must be in 1..15 (0 is gpu.barrier), got 0

// -----

func.func @named_barrier_threads() {
  tile.named_barrier 2, 48
  func.return
}
// CHECK: 'tile.named_barrier' threads must be a multiple of 32 up to 1024, got 48

// -----

func.func @setmaxnreg_action() {
  tile.setmaxnreg keep 128
  func.return
}
// CHECK: 'tile.setmaxnreg' action must be inc or dec, got keep

// -----

func.func @setmaxnreg_range() {
  tile.setmaxnreg inc 264
  func.return
}
// CHECK: 'tile.setmaxnreg' registers must be a multiple of 8 in 24..256, got 264

// -----

func.func @multicast_nobody(%m: !tile.tensor_map<64x64xf16, swizzle 128>, %s: memref<64x64xf16, 3>,
                            %b: memref<1xi64, 3>, %i: index) {
  tile.tma_load %m[%i, %i], %s[%i, %i], %b[%i] multicast 0 : !tile.tensor_map<64x64xf16, swizzle 128>, memref<64x64xf16, 3>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.tma_load' multicast is a mask of up to 16 CTAs of the cluster, got 0

// -----

func.func @remote_expect(%b: memref<4xi64, 3>, %i: index) {
  tile.mbarrier_arrive %b[%i] expect_tx 64 cta %i : memref<4xi64, 3>
  func.return
}
// CHECK: 'tile.mbarrier_arrive' expects bytes on its own CTA's barriers only: expect_tx and cta exclude each other

// -----

func.func @named_barrier_without_id() {
  "tile.named_barrier"() <{threads = 128 : i32}> : () -> ()
  func.return
}
// CHECK: 'tile.named_barrier' takes its id either as a constant or as an operand, not both or neither

// -----

func.func @im2col_offsets_and_coordinates(%m: !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>,
                                          %s: memref<64x64xf16, 3>, %b: memref<1xi64, 3>,
                                          %i: index) {
  tile.tma_load %m[%i, %i, %i] im2col [%i, %i], %s[%i, %i], %b[%i] : !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>, memref<64x64xf16, 3>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.tma_load' im2col takes a box of pixels x channels, 1 to 3 filter offsets and two coordinates more (batch, spatial ..., channel), got a box of rank 2, 2 offsets and 3 coordinates

// -----

func.func @im2col_load_from_a_tiled_map(%m: !tile.tensor_map<64x64xf16, swizzle 128>,
                                        %s: memref<64x64xf16, 3>, %b: memref<1xi64, 3>,
                                        %i: index) {
  tile.tma_load %m[%i, %i, %i, %i] im2col [%i, %i], %s[%i, %i], %b[%i] : !tile.tensor_map<64x64xf16, swizzle 128>, memref<64x64xf16, 3>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.tma_load' im2col offsets go with an im2col map and only with one, got 2 offsets and !tile.tensor_map<64x64xf16, swizzle 128>

// -----

func.func @tiled_load_from_an_im2col_map(%m: !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>,
                                         %s: memref<64x64xf16, 3>, %b: memref<1xi64, 3>,
                                         %i: index) {
  tile.tma_load %m[%i, %i], %s[%i, %i], %b[%i] : !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>, memref<64x64xf16, 3>, memref<1xi64, 3>
  func.return
}
// CHECK: 'tile.tma_load' im2col offsets go with an im2col map and only with one, got 0 offsets and !tile.tensor_map<64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>

// -----

func.func @im2col_map_of_rank_three(%m: !tile.tensor_map<2x64x64xf16, swizzle 128, im2col [2, 16, 16, 64]>) {
  func.return
}
// CHECK: !tile.tensor_map of im2col has a box of pixels x channels (at most the tensor's) over an N x spatial x C tensor of rank 3 to 5, got a box [2, 64, 64] over [2, 16, 16, 64]

// -----

func.func @prefetch_coordinates(%m: !tile.tensor_map<128x64xf16, swizzle 128>, %i: index) {
  tile.tma_prefetch %m[%i] : !tile.tensor_map<128x64xf16, swizzle 128>
  func.return
}
// CHECK: 'tile.tma_prefetch' prefetches a tiled map's box at one coordinate per dimension of the box, got !tile.tensor_map<128x64xf16, swizzle 128> and 1 coordinates

// -----

func.func @prefetch_im2col(%m: !tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 56, 56, 64]>, %i: index) {
  tile.tma_prefetch %m[%i, %i] : !tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 56, 56, 64]>
  func.return
}
// CHECK: 'tile.tma_prefetch' prefetches a tiled map's box at one coordinate per dimension of the box, got !tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 56, 56, 64]> and 2 coordinates
