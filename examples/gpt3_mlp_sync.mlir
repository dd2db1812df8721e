// GPT-3 MLP, two dependent GEMMs synchronized tile by tile (cuSync's running example), with
// the synchronization generated from one declared dependency:
//
//   H[256, 1536] = X[256, 512] · W1[512, 1536]      stage @gemm1, tiles 32×32 → grid (8, 48)
//   Y[256, 512]  = H[256, 1536] · W2[1536, 512]     stage @gemm2, tiles 32×32 → grid (8, 16)
//
// A tile (x, y) of GEMM2 reads the whole row x of H, i.e. producer tiles (x, s0) for s0 in
// [0, 48); its k-step kt (32 columns of H) reads exactly producer tile (x, kt). The kernels are
// plain shared-memory GEMMs (one thread per output element) with two kinds of hooks:
// `sync.load_point operand N [x, y] step kt` before loading operand N's k-step, and
// `sync.store_point [x, y]` after the output tile is stored. The passes fill them:
//
//   tilesync-opt examples/gpt3_mlp_sync.mlir -t ptx \
//     -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-verify,tilesync-lower-to-llvm
//
// sync-generate-policies picks RowSync for @gemm1 (a consumer reads all 48 tiles of a row);
// sync-insert-post-wait makes GEMM2 wait on its row before each k-step of H (not W2, which no
// stage produces) and GEMM1 post after its store; sync-insert-wait-kernel, GEMM1 post its start
// flag for the wait-kernel below; sync-verify proves it, relying on that wait-kernel.
builtin.module attributes {gpu.container_module} {
  gpu.module @mlp {
    "memref.global"() <{sym_name = "a_tile", sym_visibility = "private", type = memref<32x32xf32, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "b_tile", sym_visibility = "private", type = memref<32x32xf32, 3>, initial_value}> : () -> ()

    // C[256, 1536] = A[256, 512] · B[512, 1536]
    gpu.func @gemm1(%a: memref<256x512xf32>, %b: memref<512x1536xf32>, %c: memref<256x1536xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 32, 1>} {
      %x, %y = sync.tile : index, index
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %ksteps = arith.constant 16 : index
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
        %av = memref.load %a[%row, %ka] : memref<256x512xf32>
        memref.store %av, %as[%ty, %tx] : memref<32x32xf32, 3>
        sync.load_point operand 1 [%x, %y] step %kt
        %kb = arith.addi %k0, %ty : index
        %bv = memref.load %b[%kb, %col] : memref<512x1536xf32>
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
      memref.store %acc, %c[%row, %col] : memref<256x1536xf32>
      sync.store_point [%x, %y]
      gpu.return
    }

    // C[256, 512] = A[256, 1536] · B[1536, 512]
    gpu.func @gemm2(%a: memref<256x1536xf32>, %b: memref<1536x512xf32>, %c: memref<256x512xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 32, 1>} {
      %x, %y = sync.tile : index, index
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %ksteps = arith.constant 48 : index
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
        %av = memref.load %a[%row, %ka] : memref<256x1536xf32>
        memref.store %av, %as[%ty, %tx] : memref<32x32xf32, 3>
        sync.load_point operand 1 [%x, %y] step %kt
        %kb = arith.addi %k0, %ty : index
        %bv = memref.load %b[%kb, %col] : memref<1536x512xf32>
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
      memref.store %acc, %c[%row, %col] : memref<256x512xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
  }

  sync.stage @gemm1 {kernel = @mlp::@gemm1, grid = array<i64: 8, 48>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>}
  sync.stage @gemm2 {kernel = @mlp::@gemm2, grid = array<i64: 8, 16>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>}
  // GEMM2's operand 0 (H) tile (x, y) reads GEMM1's tiles (x, s0) for all s0; k-step kt is s0.
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
  sync.launch @gemm1 {stream = 0 : i64, priority = -1 : i64}
  sync.wait_kernel @gemm1 {stream = 1 : i64}
  sync.launch @gemm2 {stream = 1 : i64}
}
