// Two dependent kernels of equal synthetic tiles (the wave experiment of the cuSync paper):
// each block of 1024 threads owns a tile of 1024 floats, runs `iters` dependent multiply-adds
// per element and then holds its SM slot until `tile_ns` have passed since the tile started
// (read off %globaltimer). A tile thus lasts the same time whatever else shares its SM, which
// is the wave model's premise; an arithmetic-only tile would run faster in a partial wave.
// The consumer tile t reads producer tile t (TileSync); its tile starts once the wait is over.
// Kernel parameters: input, output, semaphores, epoch, iterations, tile duration in ns.
builtin.module {
  gpu.module @synthetic_kernels {
    gpu.func @producer(%src: memref<?xf32>, %mid: memref<?xf32>, %sems: memref<?xi32>,
                       %epoch: i32, %iters: i32, %tile_ns: i64) kernel
        attributes {gpu.known_block_size = array<i32: 1024, 1, 1>,
                    tilesync.min_blocks_per_sm = 2 : i32} {
      %start = nvvm.read.ptx.sreg.globaltimer : i64
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
      scf.while () : () -> () {
        %now = nvvm.read.ptx.sreg.globaltimer : i64
        %elapsed = arith.subi %now, %start : i64
        %early = arith.cmpi slt, %elapsed, %tile_ns : i64
        scf.condition(%early)
      } do {
        %nap = arith.constant 200 : i32
        nvvm.nanosleep %nap : i32
        scf.yield
      }
      memref.store %y, %mid[%g] : memref<?xf32>
      sync.post %sems[%tile] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }

    gpu.func @consumer(%mid: memref<?xf32>, %dst: memref<?xf32>, %sems: memref<?xi32>,
                       %epoch: i32, %iters: i32, %tile_ns: i64) kernel
        attributes {gpu.known_block_size = array<i32: 1024, 1, 1>,
                    tilesync.min_blocks_per_sm = 2 : i32} {
      %tile = sync.tile : index
      %tid = gpu.thread_id x
      %tile_elems = arith.constant 1024 : index
      %base = arith.muli %tile, %tile_elems : index
      %g = arith.addi %base, %tid : index
      sync.wait %sems[%tile] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %start = nvvm.read.ptx.sreg.globaltimer : i64
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
      scf.while () : () -> () {
        %now = nvvm.read.ptx.sreg.globaltimer : i64
        %elapsed = arith.subi %now, %start : i64
        %early = arith.cmpi slt, %elapsed, %tile_ns : i64
        scf.condition(%early)
      } do {
        %nap = arith.constant 200 : i32
        nvvm.nanosleep %nap : i32
        scf.yield
      }
      memref.store %y, %dst[%g] : memref<?xf32>
      gpu.return
    }
  }
}
