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

// -----

// The consumer stores into the epoch counter, then waits against what it loads back: from the
// second launch on it compares against 1, not the launch count.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<8x64xf32>, %sems: memref<?xi32>, %ctr: memref<1xi32>) kernel attributes {sync.args = ["sems:@p", "epoch_counter"]} {
      %c0 = arith.constant 0 : index
      %epoch = memref.load %ctr[%c0] : memref<1xi32>
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%t, %c0] : memref<8x64xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<8x64xf32>, %sems: memref<?xi32>, %ctr: memref<1xi32>) kernel attributes {sync.args = ["sems:@p", "epoch_counter"]} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %i1 = arith.constant 1 : i32
      memref.store %i1, %ctr[%c0] : memref<1xi32>
      %e = memref.load %ctr[%c0] : memref<1xi32>
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %e policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %v = memref.load %a[%t, %c0] : memref<8x64xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:230:7: sync-verify: sync.wait does not compare against the kernel's epoch

// -----

// A load past the one-word epoch counter is not the epoch.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<8x64xf32>, %sems: memref<?xi32>, %ctr: memref<1xi32>) kernel attributes {sync.args = ["sems:@p", "epoch_counter"]} {
      %c0 = arith.constant 0 : index
      %epoch = memref.load %ctr[%c0] : memref<1xi32>
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%t, %c0] : memref<8x64xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<8x64xf32>, %sems: memref<?xi32>, %ctr: memref<1xi32>) kernel attributes {sync.args = ["sems:@p", "epoch_counter"]} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %e = memref.load %ctr[%c1] : memref<1xi32>
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %e policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %v = memref.load %a[%t, %c0] : memref<8x64xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:262:7: sync-verify: sync.wait does not compare against the kernel's epoch

// -----

// One sync.tile draws a ticket in column-major order, the other reads the block's id: the block
// stores one tile and posts another.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<128x256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %x, %y = sync.tile order #sync.order<column_major> : index, index
      %c64 = arith.constant 64 : index
      %r = arith.muli %x, %c64 : index
      %c = arith.muli %y, %c64 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%r, %c] : memref<128x256xf32>
      %u, %v = sync.tile : index, index
      sync.post %sems[%u, %v] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<128x256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %x, %y = sync.tile : index, index
      %c64 = arith.constant 64 : index
      sync.wait %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
      %r = arith.muli %x, %c64 : index
      %c = arith.muli %y, %c64 : index
      %v = memref.load %a[%r, %c] : memref<128x256xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 4>, block = array<i64: 128>, tile = array<i64: 64, 64>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:288:7: sync-verify: the sync.tile ops of @k::@p do not name one order (#sync.order<column_major> and none): a block takes one tile, so every sync.tile of a kernel that orders its tiles names that order

// -----

// The probe's answer guards the loads themselves (scf.if %ready: read; else: wait, read). The
// proof follows a probe only through the `unless` of the wait it lets the block skip: refused,
// and the message says so (it only said that no wait precedes the read).
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<128x256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %x, %y = sync.tile : index, index
      %c64 = arith.constant 64 : index
      %r = arith.muli %x, %c64 : index
      %c = arith.muli %y, %c64 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%r, %c] : memref<128x256xf32>
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<128x256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %row = arith.muli %x, %c64 : index
      %ready = sync.probe %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: 0, 4, 1>] : memref<?xi32>
      scf.if %ready {
        scf.for %k = %c0 to %c4 step %c1 {
          %col = arith.muli %k, %c64 : index
          %v = memref.load %a[%row, %col] : memref<128x256xf32>
        }
      } else {
        scf.for %k = %c0 to %c4 step %c1 {
          sync.wait %sems[%x, %k] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
        }
        scf.for %k = %c0 to %c4 step %c1 {
          %col = arith.muli %k, %c64 : index
          %v = memref.load %a[%row, %col] : memref<128x256xf32>
        }
      }
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 1>, block = array<i64: 128>, tile = array<i64: 64, 256>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_hand_written_hooks_invalid.mlir:[[# @LINE - 20]]:11: sync-verify: consumer tile (0, 0) of @c: 'memref.load' reads operand 0 with no sync.load_point before it, which reads producer tile (0, 0) of @p (semaphore 0), but no wait on that semaphore precedes it (a sync.probe's answer orders reads only as the `unless` of the sync.wait it lets the block skip)
