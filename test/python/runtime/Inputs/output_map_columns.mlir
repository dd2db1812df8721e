// Two producers write disjoint column blocks of one buffer (the K of separate Q and K GEMMs at
// column 32: output_map), and a consumer whose row-block tile reads both halves of the next
// row block, each producer on its own stream, the consumer behind their wait-kernels.
builtin.module {
  gpu.module @k {
    gpu.func @q(%in: memref<64x32xf32>, %out: memref<64x64xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %x8 = arith.muli %x, %c8 : index
      %r = arith.divui %t, %c32 : index
      %c = arith.remui %t, %c32 : index
      %m = arith.addi %x8, %r : index
      %v = memref.load %in[%m, %c] : memref<64x32xf32>
      memref.store %v, %out[%m, %c] : memref<64x64xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @k(%in: memref<64x32xf32>, %out: memref<64x64xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %x8 = arith.muli %x, %c8 : index
      %r = arith.divui %t, %c32 : index
      %c = arith.remui %t, %c32 : index
      %m = arith.addi %x8, %r : index
      %n = arith.addi %c, %c32 : index
      %v = memref.load %in[%m, %c] : memref<64x32xf32>
      %neg = arith.negf %v : f32
      memref.store %neg, %out[%m, %n] : memref<64x64xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%qk: memref<64x64xf32>, %out: memref<64x64xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %x = sync.tile : index
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      %c256 = arith.constant 256 : index
      %x1 = arith.addi %x, %c1 : index
      %next = arith.remui %x1, %c8 : index
      %src = arith.muli %next, %c8 : index
      %dst = arith.muli %x, %c8 : index
      sync.load_point operand 0 [%x]
      // a row block of 8 x 64 elements: 2 an thread
      scf.for %i = %t to %c256 step %c256 {
        scf.for %j = %c0 to %c2 step %c1 {
          %e0 = arith.muli %i, %c2 : index
          %e = arith.addi %e0, %j : index
          %r = arith.divui %e, %c64 : index
          %col = arith.remui %e, %c64 : index
          %sr = arith.addi %src, %r : index
          %dr = arith.addi %dst, %r : index
          %v = memref.load %qk[%sr, %col] : memref<64x64xf32>
          memref.store %v, %out[%dr, %col] : memref<64x64xf32>
        }
      }
      sync.store_point [%x]
      gpu.return
    }
  }
  sync.stage @q {kernel = @k::@q, grid = array<i64: 8, 1>, block = array<i64: 256>, tile = array<i64: 8, 32>}
  sync.stage @kk {kernel = @k::@k, grid = array<i64: 8, 1>, block = array<i64: 256>, tile = array<i64: 8, 32>, output_map = affine_map<(d0, d1) -> (d0, d1 + 32)>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 256>, tile = array<i64: 8>}
  sync.dependency @q -> @c operand 0 tiles (d0) -> ((d0 + 1) mod 8, 0)
  sync.dependency @kk -> @c operand 0 tiles (d0) -> ((d0 + 1) mod 8, 0)
  sync.launch @q {stream = 0 : i64, priority = -1 : i64}
  sync.launch @kk {stream = 1 : i64, priority = -1 : i64}
  sync.wait_kernel @q {stream = 2 : i64}
  sync.wait_kernel @kk {stream = 2 : i64}
  sync.launch @c {stream = 2 : i64}
}
