// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-insert-post-wait,sync-verify{sms=4}' --verify-diagnostics | filecheck %s
// The soundness classes of issue 13: programs sync-verify once proved although the simulator
// deadlocks them (or reads early), each refused now with the stages, tiles or cycle named.
// Every kernel loads the element of its tile (tile t: elements [64 t, 64 t + 64)).

// Class 1 (whole program): three stages on three streams, 2 blocks each, one block per SM on
// 4 SMs. Each pair fits (4 blocks), the program does not (6): @c's blocks and @b's can hold
// every SM while @a still waits for one. Counted per pair this was "co-resident".
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {stream = 1 : i64}
  sync.launch @c {stream = 2 : i64}
}
// CHECK: verify_soundness_invalid.mlir:28:3: sync-verify: no forward-progress guarantee for @b waiting on @a: launch a sync.wait_kernel @a before @b on its stream, launch @b with pdl = true right after @a on its stream, or show that all stages are co-resident (coresident, or blocks_per_sm on every stage and sms=N) (not all 6 blocks are co-resident (at most 4 = 4 SMs x 1 blocks per SM); 2 consumer blocks and 2 blocks of other stages dispatched first could fill every SM: the wait-kernel is what keeps this from deadlocking)

// -----

// Class 1: the same chain with @b and @c declared coresident. The declaration is checked
// against the counts: 6 blocks do not fit in 4 slots.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 1 : i64, coresident}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 1 : i64, coresident}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {stream = 1 : i64}
  sync.launch @c {stream = 2 : i64}
}
// CHECK: verify_soundness_invalid.mlir:56:3: sync-verify: no forward-progress guarantee for @b waiting on @a: @b is declared coresident, but not all 6 blocks are co-resident (at most 4 = 4 SMs x 1 blocks per SM): the declaration does not hold

// -----

// Class 3 (cycles): two stages that wait on each other's tiles, both declared coresident.
// Nothing can finish first on any machine.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>, coresident}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>, coresident}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @a operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {stream = 1 : i64}
}
// CHECK: verify_soundness_invalid.mlir:80:3: sync-verify: the dependencies form a cycle @a -> @b -> @a: each stage of it waits for the next one's tiles, so none can finish first and the program can never make progress

// -----

// Class 3: a longer cycle, without co-residency: named all the way round.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @x {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @a {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @x -> @a operand 0 tiles (d0) -> (d0)
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @c operand 0 tiles (d0) -> (d0)
  sync.dependency @c -> @a operand 0 tiles (d0) -> (d0)
}
// CHECK: verify_soundness_invalid.mlir:108:3: sync-verify: the dependencies form a cycle @a -> @b -> @c -> @a: each stage of it waits for the next one's tiles

// -----

// Class 4 (a mechanism named but not present): the plan launches a wait-kernel for @a, but
// @a's kernel never raises its start flag and no wait-kernel function exists (what the
// README's pipeline did for examples/gpt3_mlp_sync.mlir without sync-insert-wait-kernel).
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.wait_kernel @a {stream = 1 : i64}
  sync.launch @b {stream = 1 : i64}
}
// CHECK: verify_soundness_invalid.mlir:137:3: sync-verify: no forward-progress guarantee for @b waiting on @a: the sync.wait_kernel @a before @b on stream 1 does not work: @a's kernel does not post its start flag once on entry at flag[0], or the module's wait-kernel function does not wait for that flag to reach the host's target (run sync-insert-wait-kernel)

// -----

// Class 4: the wait-kernel function exists, but the producer never posts its start flag.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
    gpu.func @tilesync_wait_kernel(%flag: memref<?xi32>, %target: i32) kernel attributes {sync.args = ["wait_flag", "wait_target"]} {
      %c0 = arith.constant 0 : index
      sync.wait %flag[%c0] epoch %target policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.wait_kernel @a {stream = 1 : i64}
  sync.launch @b {stream = 1 : i64}
}
// CHECK: verify_soundness_invalid.mlir:167:3: sync-verify: no forward-progress guarantee for @b waiting on @a: the sync.wait_kernel @a before @b on stream 1 does not work

// -----

// Class 5 (the dependency is checked against the loads): the reference cuSync's conv halo bug.
// Output row r of a 3x3 convolution reads input rows r-1, r and r+1, but the dependency
// declares row r only, so the waits cover row r only: the load of row r-1 is refused, with
// the producer tile that wrote it.
builtin.module {
  gpu.module @k {
    gpu.func @conv(%in: memref<8x256xf32>, %out: memref<8x256xf32>) kernel {
      %r, %c = sync.tile : index, index
      %tx = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %col0 = arith.muli %c, %c64 : index
      %col = arith.addi %col0, %tx : index
      sync.load_point operand 0 [%r, %c]
      scf.for %dr = %c0 to %c3 step %c1 {
        %up = arith.addi %r, %dr : index
        %row = arith.subi %up, %c1 : index
        %v = memref.load %in[%row, %col] : memref<8x256xf32>
      }
      memref.store %zero, %out[%r, %col] : memref<8x256xf32>
      sync.store_point [%r, %c]
      gpu.return
    }
  }
  sync.stage @conv1 {kernel = @k::@conv, grid = array<i64: 8, 4>, block = array<i64: 64>, tile = array<i64: 1, 64>}
  sync.stage @conv2 {kernel = @k::@conv, grid = array<i64: 8, 4>, block = array<i64: 64>, tile = array<i64: 1, 64>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @conv1
  sync.launch @conv2 {pdl = true}
}
// CHECK: verify_soundness_invalid.mlir:193:9: sync-verify: consumer tile (0, 0) of @conv2: 'memref.load' reads operand 0 at [-1, 1], [0, 63], where producer tile (1, 0) of @conv1 wrote [1, 2) x [0, 64) (a tile its sync.dependency does not declare; semaphore 4), but no wait on that semaphore precedes it

// -----

// Class 5: an index that cannot be bounded (read from memory) names its load.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>, %idx: memref<?xindex>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      %j = memref.load %idx[%i] : memref<?xindex>
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%j] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {pdl = true}
}
// CHECK: verify_soundness_invalid.mlir:219:7: sync-verify: consumer @b: cannot bound index 0 of this 'memref.load' of operand 0, so cannot tell which producer tiles it touches

// -----

// Class 5: a produced operand used by an op whose reads cannot be bounded (a subview).
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<512xf32>) kernel {
      %t = sync.tile : index
      sync.store_point [%t]
      gpu.return
    }
    gpu.func @f(%in: memref<512xf32>, %out: memref<512xf32>) kernel {
      %t = sync.tile : index
      sync.load_point operand 0 [%t]
      %s = memref.subview %in[0] [64] [1] : memref<512xf32> to memref<64xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@p, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {pdl = true}
}
// CHECK: verify_soundness_invalid.mlir:246:7: sync-verify: consumer @b: 'memref.subview' uses a produced operand in a way sync-verify cannot bound (which elements does it touch?); access it through memref.load/store or the tile dialect's copies

// -----

// Class 5: an operand of a rank below the producer's grid's (and not 1) has no map from its
// indices to the producer's tiles.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<8x64xf32>, %out: memref<8x64xf32>) kernel {
      %t, %u, %v = sync.tile : index, index, index
      %c0 = arith.constant 0 : index
      sync.load_point operand 0 [%t, %u, %v]
      %x = memref.load %in[%t, %c0] : memref<8x64xf32>
      sync.store_point [%t, %u, %v]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8, 1, 1>, block = array<i64: 64>, tile = array<i64: 1, 64, 1>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8, 1, 1>, block = array<i64: 64>, tile = array<i64: 1, 64, 1>}
  sync.dependency @a -> @b operand 0 tiles (d0, d1, d2) -> (d0, d1, d2)
  sync.launch @a
  sync.launch @b {pdl = true}
}
// CHECK: verify_soundness_invalid.mlir:269:7: sync-verify: consumer @b: 'memref.load' reads operand 0, but its type memref<8x64xf32> has rank 2 while @a's tiles form a 3-D grid: no map from its indices to @a's tiles (give it rank 1, or 3 or more: leading dimensions collapse into the first; a grid dimension that splits the reduction rather than the output, split-K, is not supported: one block writes and posts each output tile)

// -----

// Class 5, a higher rank: the leading dimensions collapse into the producer's rows (an
// implicit-GEMM conv reads the NHW x K output before it as N x H x W x K). Tile t reads row
// 8t - 1 too (where it is inside the image: the guard), written by tile t - 1: the halo its
// dependency leaves out.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<2x4x8x64xf32>, %out: memref<64x64xf32>) kernel {
      %t, %u = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c7 = arith.constant 7 : index
      %n = arith.divui %t, %c2 : index
      %half = arith.remui %t, %c2 : index
      %h = arith.muli %half, %c2 : index
      %above = arith.subi %h, %c1 : index
      sync.load_point operand 0 [%t, %u]
      %inside = arith.cmpi sge, %above, %c0 : index
      scf.if %inside {
        %x = memref.load %in[%n, %above, %c7, %c0] : memref<2x4x8x64xf32>
      }
      sync.store_point [%t, %u]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 1>, block = array<i64: 64>, tile = array<i64: 16, 64>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 1>, block = array<i64: 64>, tile = array<i64: 16, 64>}
  sync.dependency @a -> @b operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @a
  sync.launch @b {pdl = true}
}
// CHECK: verify_soundness_invalid.mlir:304:9: sync-verify: consumer tile (1, 0) of @b: 'memref.load' reads operand 0 at [0, 0], [1, 1], [7, 7], [0, 0], where producer tile (0, 0) of @a wrote [0, 16) x [0, 64) (a tile its sync.dependency does not declare; semaphore 0), but no wait on that semaphore precedes it


// -----

// Class 4: a wait-kernel nothing relies on (@b follows @a on stream 0 anyway) still runs, and
// without its start flag it never ends: the plan never completes.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.wait_kernel @a
  sync.launch @b
}
// CHECK: verify_soundness_invalid.mlir:[[# @LINE - 3]]:3: sync-verify: the host plan never completes: the wait-kernel of @a (stream 0) never ends: @a's kernel does not post its start flag once on entry at flag[0], or the module's wait-kernel function does not wait for that flag to reach the host's target (run sync-insert-wait-kernel)

// -----

// Class 5: the producer-tile → region map must hold on the producer's side too. Here each
// producer tile stores into the region of the next one, so a consumer that waits for tile t
// would read what tile t - 1 wrote: refused at the store.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<512xf32>) kernel {
      %t = sync.tile : index
      %zero = arith.constant 0.0 : f32
      %i = affine.apply affine_map<(d0) -> (d0 * 64 + 64)>(%t)
      memref.store %zero, %out[%i] : memref<512xf32>
      sync.store_point [%t]
      gpu.return
    }
    gpu.func @c(%in: memref<512xf32>) kernel {
      %t = sync.tile : index
      %i = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<512xf32>
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@p, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @b {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {pdl = true}
}
// CHECK: verify_soundness_invalid.mlir:356:7: sync-verify: producer tile (0,) of @a: 'memref.store' writes argument 0 at [64, 64], outside [0, 64), the region of it its consumers wait for tile (0,) to have written (the stage's tile (64,) over the operand's layout)

// -----

// Class 1, found by the differential test: @c waits on @p under the wave model (its 4 half-SM
// blocks always leave room for @p's half-SM block), but @p's launch waits for @x on stream 0,
// and @x needs a whole SM, which @c's blocks, spread one per SM, leave none of. Whatever the
// producer's launch waits for must find a slot too.
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @x {kernel = @k::@f, grid = array<i64: 1>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.stage @p {kernel = @k::@f, grid = array<i64: 1>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 2 : i64}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 2 : i64}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (0)
  sync.launch @x
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}
// CHECK: sync-verify: no forward-progress guarantee for @c waiting on @p: {{.*}}@p's launch waits for @x, and the blocks of the other stages (@c's first) could leave no SM a block of @x fits on)

// -----

// The same for a staged epilogue's 16-byte copies out of shared memory (tile.copy_out): the
// last chunk of each tile starts 4 elements before its end and spills into the next tile's.
builtin.module {
  gpu.module @k {
    "memref.global"() <{sym_name = "smem", type = memref<8x64xf16, 3 : i64>, initial_value, sym_visibility = "private"}> : () -> ()
    gpu.func @p(%out: memref<512xf16>) kernel {
      %t = sync.tile : index
      %s = memref.get_global @smem : memref<8x64xf16, 3 : i64>
      %c0 = arith.constant 0 : index
      %i = affine.apply affine_map<(d0) -> (d0 * 64 + 60)>(%t)
      tile.copy_out %out[%i], %s[%c0, %c0] : memref<512xf16>, memref<8x64xf16, 3 : i64>
      sync.store_point [%t]
      gpu.return
    }
    gpu.func @c(%in: memref<512xf16>) kernel {
      %t = sync.tile : index
      %i = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<512xf16>
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@p, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @b {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {pdl = true}
}
// CHECK: verify_soundness_invalid.mlir:417:7: sync-verify: producer tile (0,) of @a: 'tile.copy_out' writes argument 0 at [60, 67], outside [0, 64), the region of it its consumers wait for tile (0,) to have written (the stage's tile (64,) over the operand's layout)

// -----

// Class 1 with counts known for the producer only: @a alone has more blocks than the 4 SMs
// hold, so the program is not co-resident whatever @b's occupancy, and @b's declaration is
// refused (the simulator deadlocks it: @b's blocks can take every SM first).
builtin.module {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, coresident}
  sync.dependency @a -> @b operand 0 tiles (d0)[s0] -> (s0) forall s0 in [0, 8)
  sync.launch @a
  sync.launch @b {stream = 1 : i64}
}
// CHECK: verify_soundness_invalid.mlir:[[# @LINE - 2]]:3: sync-verify: no forward-progress guarantee for @b waiting on @a: @b is declared coresident, but @a alone has 8 blocks, more than 4 SMs x 1 blocks per SM: the declaration does not hold
