// A three-stage chain of GEMMs, Y3 = ((X·W1)·W2)·W3, each stage reading the whole row of
// the one before, launched as programmatic dependents on one stream (PDL: a dependent grid
// starts only after every block of the previous one has started, so its spinning blocks never
// starve the producer). The middle stage is both a consumer (waits on @gemm1) and a producer
// (posts for @gemm3).
//
//   tilesync-opt examples/three_stage_chain.mlir \
//     -p sync-generate-policies,sync-insert-post-wait,sync-verify,tilesync-lower-to-llvm -t ptx
//
// (sync-use-pdl then adds the producer-side trigger the runtime needs for an early start.)
builtin.module attributes {gpu.container_module} {
  gpu.module @chain {
    "memref.global"() <{sym_name = "a_tile", sym_visibility = "private", type = memref<32x32xf32, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "b_tile", sym_visibility = "private", type = memref<32x32xf32, 3>, initial_value}> : () -> ()

    // C[128, 256] = A[128, 256] · B[256, 256], 32×32 tiles, one thread per output element
    gpu.func @gemm1(%a: memref<128x256xf32>, %b: memref<256x256xf32>, %c: memref<128x256xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 32, 1>} {
      %x, %y = sync.tile : index, index
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %ksteps = arith.constant 8 : index
      %zero = arith.constant 0.0 : f32
      %as = memref.get_global @a_tile : memref<32x32xf32, 3>
      %bs = memref.get_global @b_tile : memref<32x32xf32, 3>
      %row0 = arith.muli %x, %c32 : index
      %row = arith.addi %row0, %ty : index
      %col0 = arith.muli %y, %c32 : index
      %col = arith.addi %col0, %tx : index
      %acc = scf.for %kt = %c0 to %ksteps step %c1 iter_args(%sum = %zero) -> (f32) {
        %k0 = arith.muli %kt, %c32 : index
        sync.load_point operand 0 [%x, %y] step %kt
        %ka = arith.addi %k0, %tx : index
        %av = memref.load %a[%row, %ka] : memref<128x256xf32>
        memref.store %av, %as[%ty, %tx] : memref<32x32xf32, 3>
        sync.load_point operand 1 [%x, %y] step %kt
        %kb = arith.addi %k0, %ty : index
        %bv = memref.load %b[%kb, %col] : memref<256x256xf32>
        memref.store %bv, %bs[%ty, %tx] : memref<32x32xf32, 3>
        gpu.barrier
        %part = scf.for %kk = %c0 to %c32 step %c1 iter_args(%s = %sum) -> (f32) {
          %l = memref.load %as[%ty, %kk] : memref<32x32xf32, 3>
          %r = memref.load %bs[%kk, %tx] : memref<32x32xf32, 3>
          %p = arith.mulf %l, %r : f32
          %n = arith.addf %s, %p : f32
          scf.yield %n : f32
        }
        gpu.barrier
        scf.yield %part : f32
      }
      memref.store %acc, %c[%row, %col] : memref<128x256xf32>
      sync.store_point [%x, %y]
      gpu.return
    }

    // C[128, 256] = A[128, 256] · B[256, 256], 32×32 tiles, one thread per output element
    gpu.func @gemm2(%a: memref<128x256xf32>, %b: memref<256x256xf32>, %c: memref<128x256xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 32, 1>} {
      %x, %y = sync.tile : index, index
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %ksteps = arith.constant 8 : index
      %zero = arith.constant 0.0 : f32
      %as = memref.get_global @a_tile : memref<32x32xf32, 3>
      %bs = memref.get_global @b_tile : memref<32x32xf32, 3>
      %row0 = arith.muli %x, %c32 : index
      %row = arith.addi %row0, %ty : index
      %col0 = arith.muli %y, %c32 : index
      %col = arith.addi %col0, %tx : index
      %acc = scf.for %kt = %c0 to %ksteps step %c1 iter_args(%sum = %zero) -> (f32) {
        %k0 = arith.muli %kt, %c32 : index
        sync.load_point operand 0 [%x, %y] step %kt
        %ka = arith.addi %k0, %tx : index
        %av = memref.load %a[%row, %ka] : memref<128x256xf32>
        memref.store %av, %as[%ty, %tx] : memref<32x32xf32, 3>
        sync.load_point operand 1 [%x, %y] step %kt
        %kb = arith.addi %k0, %ty : index
        %bv = memref.load %b[%kb, %col] : memref<256x256xf32>
        memref.store %bv, %bs[%ty, %tx] : memref<32x32xf32, 3>
        gpu.barrier
        %part = scf.for %kk = %c0 to %c32 step %c1 iter_args(%s = %sum) -> (f32) {
          %l = memref.load %as[%ty, %kk] : memref<32x32xf32, 3>
          %r = memref.load %bs[%kk, %tx] : memref<32x32xf32, 3>
          %p = arith.mulf %l, %r : f32
          %n = arith.addf %s, %p : f32
          scf.yield %n : f32
        }
        gpu.barrier
        scf.yield %part : f32
      }
      memref.store %acc, %c[%row, %col] : memref<128x256xf32>
      sync.store_point [%x, %y]
      gpu.return
    }

    // C[128, 256] = A[128, 256] · B[256, 256], 32×32 tiles, one thread per output element
    gpu.func @gemm3(%a: memref<128x256xf32>, %b: memref<256x256xf32>, %c: memref<128x256xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 32, 1>} {
      %x, %y = sync.tile : index, index
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %ksteps = arith.constant 8 : index
      %zero = arith.constant 0.0 : f32
      %as = memref.get_global @a_tile : memref<32x32xf32, 3>
      %bs = memref.get_global @b_tile : memref<32x32xf32, 3>
      %row0 = arith.muli %x, %c32 : index
      %row = arith.addi %row0, %ty : index
      %col0 = arith.muli %y, %c32 : index
      %col = arith.addi %col0, %tx : index
      %acc = scf.for %kt = %c0 to %ksteps step %c1 iter_args(%sum = %zero) -> (f32) {
        %k0 = arith.muli %kt, %c32 : index
        sync.load_point operand 0 [%x, %y] step %kt
        %ka = arith.addi %k0, %tx : index
        %av = memref.load %a[%row, %ka] : memref<128x256xf32>
        memref.store %av, %as[%ty, %tx] : memref<32x32xf32, 3>
        sync.load_point operand 1 [%x, %y] step %kt
        %kb = arith.addi %k0, %ty : index
        %bv = memref.load %b[%kb, %col] : memref<256x256xf32>
        memref.store %bv, %bs[%ty, %tx] : memref<32x32xf32, 3>
        gpu.barrier
        %part = scf.for %kk = %c0 to %c32 step %c1 iter_args(%s = %sum) -> (f32) {
          %l = memref.load %as[%ty, %kk] : memref<32x32xf32, 3>
          %r = memref.load %bs[%kk, %tx] : memref<32x32xf32, 3>
          %p = arith.mulf %l, %r : f32
          %n = arith.addf %s, %p : f32
          scf.yield %n : f32
        }
        gpu.barrier
        scf.yield %part : f32
      }
      memref.store %acc, %c[%row, %col] : memref<128x256xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
  }

  sync.stage @gemm1 {kernel = @chain::@gemm1, grid = array<i64: 4, 8>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>}
  sync.stage @gemm2 {kernel = @chain::@gemm2, grid = array<i64: 4, 8>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>}
  sync.stage @gemm3 {kernel = @chain::@gemm3, grid = array<i64: 4, 8>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @gemm2 -> @gemm3 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @gemm1
  sync.launch @gemm2 {pdl = true}
  sync.launch @gemm3 {pdl = true}
}
