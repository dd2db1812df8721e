// A chain of stages of equal synthetic tiles, for the policy benchmark (tilesync bench stages).
// Every stage runs the same kernel: a block of 1024 threads owns a tile of 1024 floats, reads
// its input tile, runs `iters` dependent multiply-adds per element, holds its SM slot until
// `tile_ns` have passed since the tile started (a tile lasts the same time whatever shares its
// SM: the wave model's premise) and stores its output tile. Its hooks say where it loads
// operand 0 and when its tile is stored; the sync passes fill them from the dependencies, so
// the stages below may read one tile (TileSync) or a whole row (RowSync) of their producer.
// Thread 0 of each tile writes when its tile started and ended (%globaltimer, ns) into
// `trace[2 t]`, `trace[2 t + 1]`: the benchmark's timeline. Grids are set by the benchmark.
builtin.module {
  gpu.module @chain {
    gpu.func @tile_kernel(%src: memref<?xf32>, %dst: memref<?xf32>, %iters: i32, %tile_ns: i64,
                          %trace: memref<?xi64>)
        kernel attributes {gpu.known_block_size = array<i32: 1024, 1, 1>,
                           tilesync.min_blocks_per_sm = 2 : i32} {
      %x, %y = sync.tile : index, index
      %cols = gpu.grid_dim y
      %tid = gpu.thread_id x
      %row = arith.muli %x, %cols : index
      %linear = arith.addi %row, %y : index
      %tile_elems = arith.constant 1024 : index
      %base = arith.muli %linear, %tile_elems : index
      %g = arith.addi %base, %tid : index
      sync.load_point operand 0 [%x, %y]
      %start = nvvm.read.ptx.sreg.globaltimer : i64
      %v = memref.load %src[%g] : memref<?xf32>
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %a = arith.constant 0.999 : f32
      %b = arith.constant 0.001 : f32
      %w = scf.for %k = %c0 to %iters step %c1 iter_args(%acc = %v) -> (f32) : i32 {
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
      memref.store %w, %dst[%g] : memref<?xf32>
      %zero = arith.constant 0 : index
      %leader = arith.cmpi eq, %tid, %zero : index
      scf.if %leader {
        %end = nvvm.read.ptx.sreg.globaltimer : i64
        %two = arith.constant 2 : index
        %at = arith.muli %linear, %two : index
        %one = arith.constant 1 : index
        %at_end = arith.addi %at, %one : index
        memref.store %start, %trace[%at] : memref<?xi64>
        memref.store %end, %trace[%at_end] : memref<?xi64>
      }
      sync.store_point [%x, %y]
      gpu.return
    }
  }

  sync.stage @s1 {kernel = @chain::@tile_kernel, grid = array<i64: 4, 8>, block = array<i64: 1024, 1, 1>, tile = array<i64: 1, 1024>}
  sync.stage @s2 {kernel = @chain::@tile_kernel, grid = array<i64: 4, 8>, block = array<i64: 1024, 1, 1>, tile = array<i64: 1, 1024>}
  sync.stage @s3 {kernel = @chain::@tile_kernel, grid = array<i64: 4, 8>, block = array<i64: 1024, 1, 1>, tile = array<i64: 1, 1024>}
  sync.dependency @s1 -> @s2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @s2 -> @s3 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @s1 {stream = 0 : i64, priority = -2 : i64}
  sync.launch @s2 {stream = 1 : i64, priority = -1 : i64}
  sync.launch @s3 {stream = 2 : i64}
}
