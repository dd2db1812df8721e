// Two produced operands: O = P·V where P[128, 256] = X·Wp (stage @p_proj) and
// V[256, 128] = Y·Wv (stage @v_proj) are both computed by earlier stages. At k-step kt, a
// tile (x, y) of O reads P's tile (x, kt) and V's tile (kt, y), so both operands get waits
// (the reference cuSync guarded only operand A). Generated policies: RowSync for P (a tile of
// O reads P's whole row) and, for V, one semaphore per column (rows shared).
//
//   tilesync-opt examples/two_operands.mlir -t ptx \
//     -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-verify,tilesync-lower-to-llvm
builtin.module attributes {gpu.container_module} {
  gpu.module @attn {
    "memref.global"() <{sym_name = "a_tile", sym_visibility = "private", type = memref<32x32xf32, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "b_tile", sym_visibility = "private", type = memref<32x32xf32, 3>, initial_value}> : () -> ()

    // C[128, 256] = A[128, 256] · B[256, 256], 32×32 tiles, one thread per output element
    gpu.func @p_proj(%a: memref<128x256xf32>, %b: memref<256x256xf32>, %c: memref<128x256xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 32, 1>} {
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

    // C[256, 128] = A[256, 256] · B[256, 128], 32×32 tiles, one thread per output element
    gpu.func @v_proj(%a: memref<256x256xf32>, %b: memref<256x128xf32>, %c: memref<256x128xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 32, 1>} {
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
        %av = memref.load %a[%row, %ka] : memref<256x256xf32>
        memref.store %av, %as[%ty, %tx] : memref<32x32xf32, 3>
        sync.load_point operand 1 [%x, %y] step %kt
        %kb = arith.addi %k0, %ty : index
        %bv = memref.load %b[%kb, %col] : memref<256x128xf32>
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
      memref.store %acc, %c[%row, %col] : memref<256x128xf32>
      sync.store_point [%x, %y]
      gpu.return
    }

    // C[128, 128] = A[128, 256] · B[256, 128], 32×32 tiles, one thread per output element
    gpu.func @pv(%a: memref<128x256xf32>, %b: memref<256x128xf32>, %c: memref<128x128xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 32, 1>} {
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
        %bv = memref.load %b[%kb, %col] : memref<256x128xf32>
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
      memref.store %acc, %c[%row, %col] : memref<128x128xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
  }

  sync.stage @p_proj {kernel = @attn::@p_proj, grid = array<i64: 4, 8>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>}
  sync.stage @v_proj {kernel = @attn::@v_proj, grid = array<i64: 8, 4>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>}
  sync.stage @pv {kernel = @attn::@pv, grid = array<i64: 4, 4>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>}
  sync.dependency @p_proj -> @pv operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.dependency @v_proj -> @pv operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 8)
  sync.launch @p_proj {stream = 0 : i64}
  sync.launch @v_proj {stream = 1 : i64}
  sync.wait_kernel @p_proj {stream = 2 : i64}
  sync.wait_kernel @v_proj {stream = 2 : i64}
  sync.launch @pv {stream = 2 : i64}
}
