// A batched producer whose grid's z is the batch of a [B, M, N] output (output_map), and a
// consumer whose tile (x, y, z) reads batch z + 1 of it, on another stream behind a wait-kernel.
builtin.module {
  gpu.module @k {
    gpu.func @p(%in: memref<3x64x32xf32>, %out: memref<3x64x32xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %x, %y, %z = sync.tile : index, index, index
      %t = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %r = arith.divui %t, %c16 : index
      %c = arith.remui %t, %c16 : index
      %x16 = arith.muli %x, %c16 : index
      %y16 = arith.muli %y, %c16 : index
      %m = arith.addi %x16, %r : index
      %n = arith.addi %y16, %c : index
      %v = memref.load %in[%z, %m, %n] : memref<3x64x32xf32>
      %two = arith.constant 2.0 : f32
      %w = arith.mulf %v, %two : f32
      memref.store %w, %out[%z, %m, %n] : memref<3x64x32xf32>
      sync.store_point [%x, %y, %z]
      gpu.return
    }
    gpu.func @c(%in: memref<3x64x32xf32>, %out: memref<3x64x32xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %x, %y, %z = sync.tile : index, index, index
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c16 = arith.constant 16 : index
      %r = arith.divui %t, %c16 : index
      %c = arith.remui %t, %c16 : index
      %x16 = arith.muli %x, %c16 : index
      %y16 = arith.muli %y, %c16 : index
      %m = arith.addi %x16, %r : index
      %n = arith.addi %y16, %c : index
      %z1 = arith.addi %z, %c1 : index
      %next = arith.remui %z1, %c3 : index
      sync.load_point operand 0 [%x, %y, %z]
      %v = memref.load %in[%next, %m, %n] : memref<3x64x32xf32>
      %one = arith.constant 1.0 : f32
      %w = arith.addf %v, %one : f32
      memref.store %w, %out[%z, %m, %n] : memref<3x64x32xf32>
      sync.store_point [%x, %y, %z]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 2, 3>, block = array<i64: 256>, tile = array<i64: 16, 16, 1>, output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1)>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 2, 3>, block = array<i64: 256>, tile = array<i64: 16, 16, 1>, output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1)>}
  // consumer tile (x, y, z) reads batch z + 1 (mod 3) of the producer's output
  sync.dependency @p -> @c operand 0 tiles (d0, d1, d2) -> (d0, d1, (d2 + 1) mod 3)
  sync.launch @p {stream = 0 : i64, priority = -1 : i64}
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
