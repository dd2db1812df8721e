// Two dependent kernels of equal synthetic tiles (the wave experiment of the cuSync paper):
// each block of 1024 threads owns a tile of 1024 floats and runs `iters` dependent
// multiply-adds per element, so a tile takes the same time in both kernels. The consumer
// tile t reads producer tile t (TileSync). Kernel parameters: input, output, semaphores,
// epoch, iterations.
builtin.module {
  gpu.module @synthetic_kernels {
    gpu.func @producer(%src: memref<?xf32>, %mid: memref<?xf32>, %sems: memref<?xi32>,
                       %epoch: i32, %iters: i32) kernel
        attributes {gpu.known_block_size = array<i32: 1024, 1, 1>,
                    tilesync.min_blocks_per_sm = 2 : i32} {
      %tile = sync.tile : index
      %tid = gpu.thread_id x
      %tile_elems = arith.constant 1024 : index
      %base = arith.muli %tile, %tile_elems : index
      %g = arith.addi %base, %tid : index
      %x = memref.load %src[%g] : memref<?xf32>
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %a = arith.constant 0.999 : f32
      %b = arith.constant 0.001 : f32
      %y = scf.for %k = %c0 to %iters step %c1 iter_args(%acc = %x) -> (f32) : i32 {
        %m = arith.mulf %acc, %a : f32
        %n = arith.addf %m, %b : f32
        scf.yield %n : f32
      }
      memref.store %y, %mid[%g] : memref<?xf32>
      sync.post %sems[%tile] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }

    gpu.func @consumer(%mid: memref<?xf32>, %dst: memref<?xf32>, %sems: memref<?xi32>,
                       %epoch: i32, %iters: i32) kernel
        attributes {gpu.known_block_size = array<i32: 1024, 1, 1>,
                    tilesync.min_blocks_per_sm = 2 : i32} {
      %tile = sync.tile : index
      %tid = gpu.thread_id x
      %tile_elems = arith.constant 1024 : index
      %base = arith.muli %tile, %tile_elems : index
      %g = arith.addi %base, %tid : index
      sync.wait %sems[%tile] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %x = memref.load %mid[%g] : memref<?xf32>
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %a = arith.constant 0.999 : f32
      %b = arith.constant 0.001 : f32
      %y = scf.for %k = %c0 to %iters step %c1 iter_args(%acc = %x) -> (f32) : i32 {
        %m = arith.mulf %acc, %a : f32
        %n = arith.addf %m, %b : f32
        scf.yield %n : f32
      }
      memref.store %y, %dst[%g] : memref<?xf32>
      gpu.return
    }
  }
}
