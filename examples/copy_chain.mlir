// The cuSync paper's §V-D experiment: a producer copies an array tile by tile and a consumer
// copies it on, each consumer tile waiting for the producer tile it reads (TileSync).
// A tile is `tile_elems` consecutive floats, copied by a block of 256 threads.
// Kernel parameters: input, output, semaphores (one per tile), epoch (the launch count),
// tile size in elements.
builtin.module {
  gpu.module @copy_kernels {
    gpu.func @producer(%src: memref<?xf32>, %mid: memref<?xf32>, %sems: memref<?xi32>,
                       %epoch: i32, %tile_elems: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %tile = sync.tile : index
      %tid = gpu.thread_id x
      %threads = arith.constant 256 : index
      %base = arith.muli %tile, %tile_elems : index
      scf.for %i = %tid to %tile_elems step %threads {
        %g = arith.addi %base, %i : index
        %v = memref.load %src[%g] : memref<?xf32>
        memref.store %v, %mid[%g] : memref<?xf32>
      }
      sync.post %sems[%tile] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }

    gpu.func @consumer(%mid: memref<?xf32>, %dst: memref<?xf32>, %sems: memref<?xi32>,
                       %epoch: i32, %tile_elems: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %tile = sync.tile : index
      %tid = gpu.thread_id x
      %threads = arith.constant 256 : index
      %base = arith.muli %tile, %tile_elems : index
      sync.wait %sems[%tile] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      scf.for %i = %tid to %tile_elems step %threads {
        %g = arith.addi %base, %i : index
        %v = memref.load %mid[%g] : memref<?xf32>
        memref.store %v, %dst[%g] : memref<?xf32>
      }
      gpu.return
    }
  }
}
