// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132}' --verify-diagnostics | filecheck %s
// Hand-written synchronization hooks that once verified although they hang or read early:
// each is refused now, at the op that is wrong.

// The producer posts its start flag at flag[t], not flag[0]: the runtime's flag is one word, and
// the wait-kernel waits on flag[0] for one post of each of 300 blocks, which it never gets.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %flag: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "start_flag", "epoch"]} {
      %t = sync.tile : index
      sync.post %flag[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<?xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
    gpu.func @tilesync_wait_kernel(%f: memref<?xi32>, %target: i32) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>, sync.args = ["wait_flag", "wait_target"]} {
      %z = arith.constant 0 : index
      sync.wait %f[%z] epoch %target policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 300>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>, blocks_per_sm = 1 : i64}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 300>, block = array<i64: 128>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:36:3: sync-verify: no forward-progress guarantee for @c waiting on @p: the sync.wait_kernel @p before @c on stream 1 does not work: @p's kernel does not post its start flag once on entry at flag[0], or the module's wait-kernel function does not wait for that flag to reach the host's target (run sync-insert-wait-kernel)

// -----

// The wait-kernel function waits for nothing: with 300 + 300 blocks at one a SM on 132 SMs,
// @c's blocks can hold every SM before @p's are dispatched.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %flag: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "start_flag", "epoch"]} {
      %t = sync.tile : index
      %fz = arith.constant 0 : index
      sync.post %flag[%fz] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<?xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
    gpu.func @tilesync_wait_kernel(%f: memref<?xi32>, %target: i32) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>, sync.args = ["wait_flag", "wait_target"]} {
      %z = arith.constant 0 : index
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 300>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>, blocks_per_sm = 1 : i64}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 300>, block = array<i64: 128>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:73:3: sync-verify: no forward-progress guarantee for @c waiting on @p: the sync.wait_kernel @p before @c on stream 1 does not work: @p's kernel does not post its start flag once on entry at flag[0], or the module's wait-kernel function does not wait for that flag to reach the host's target (run sync-insert-wait-kernel)

// -----

// A wait on a semaphore whose index is loaded from memory: it covers nothing, and nothing shows
// that it ever passes (index 7 would never be posted).
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<?xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<?xf32>, %table: memref<4xindex>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %u = memref.load %table[%t] : memref<4xindex>
      sync.wait %sems[%u] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
}
// CHECK: verify_hand_written_hooks_invalid.mlir:94:7: sync-verify: cannot tell which semaphore this sync.wait waits on: it may never pass

// -----

// Threads 128..255 store the tile, threads 0..127 post it `threads 128`: their named barrier
// does not order the other threads' stores before the release.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %tid = gpu.thread_id x
      %c128 = arith.constant 128 : index
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %storer = arith.cmpi uge, %tid, %c128 : index
      scf.if %storer {
        memref.store %one, %out[%o] : memref<?xf32>
      }
      %poster = arith.cmpi ult, %tid, %c128 : index
      scf.if %poster {
        sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> threads 128 : memref<?xi32>
      }
      gpu.return
    }
    gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 60>, block = array<i64: 256>, tile = array<i64: 64>, blocks_per_sm = 1 : i64, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 60>, block = array<i64: 128>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:125:9: sync-verify: producer @p, tile (0,): thread 255 stores to the tile this sync.post releases ('memref.store'), but a `threads 128` post orders only the stores of the block's first 128 threads before its release

// -----

// Every thread stores, but the post is `threads 128`.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %tid = gpu.thread_id x
      %c128 = arith.constant 128 : index
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<?xf32>
      %poster = arith.cmpi ult, %tid, %c128 : index
      scf.if %poster {
        sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> threads 128 : memref<?xi32>
      }
      gpu.return
    }
    gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 60>, block = array<i64: 256>, tile = array<i64: 64>, blocks_per_sm = 1 : i64, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 60>, block = array<i64: 128>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:159:9: sync-verify: producer @p, tile (0,): thread 255 stores to the tile this sync.post releases ('memref.store'), but a `threads 128` post orders only the stores of the block's first 128 threads before its release

// -----

// The dependency names operand 3 of a kernel of three arguments: @c's read of its operand 0,
// bound to @p's output, is ordered by nothing.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<?xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 60>, block = array<i64: 128>, tile = array<i64: 64>, blocks_per_sm = 1 : i64, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 60>, block = array<i64: 128>, tile = array<i64: 64>, blocks_per_sm = 1 : i64}
  sync.dependency @p -> @c operand 3 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:202:3: sync-verify: kernel @k::@c of stage @c has no argument 3 (it takes 3): the operand this dependency orders does not exist
