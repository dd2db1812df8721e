// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132}' --verify-diagnostics | filecheck %s
// A barrier waits for a fixed set of threads (a block barrier: all of them), so control flow
// that depends on the thread index and lets some of them pass it by hangs the block, holding
// its SM slot: sync-verify refuses the kernel. A branch on `thread_id.x <pred> constant` (a
// role split) is allowed where every thread the barrier waits for takes the same side; any
// other thread-dependent branch or loop around a block-wide barrier is refused.

// A block barrier only the first 64 of the 128 threads reach (a warp-specialized role
// branch): the others never arrive.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %o = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %y)
    memref.store %one, %out[%o] : memref<?xf32>
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %s = %c0 to %c4 step %c1 {
      sync.wait %sems[%x, %s] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    }
    %tid = gpu.thread_id x
    %c64 = arith.constant 64 : index
    %few = arith.cmpi ult, %tid, %c64 : index
    scf.if %few {
      gpu.barrier
    }
    %e = affine.apply affine_map<(d0) -> (d0 * 16384)>(%x)
    %v = memref.load %a[%e] : memref<?xf32>
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>, blocks_per_sm = 2 : i64}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, blocks_per_sm = 2 : i64}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: stage @c: 'gpu.barrier' waits for every thread of the block, but the branch on `thread_id.x ult 64` around it splits threads 0..127: those that do not take its side never arrive

// -----

// A block-wide wait (one thread spins, then the block's barrier) under a branch computed from
// the thread index: every 64th thread reaches it.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %o = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %y)
    memref.store %one, %out[%o] : memref<?xf32>
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %s = %c0 to %c4 step %c1 {
      sync.wait %sems[%x, %s] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    }
    %tid = gpu.thread_id x
    %c64 = arith.constant 64 : index
    %r = arith.remui %tid, %c64 : index
    %lead = arith.cmpi eq, %r, %c0 : index
    scf.if %lead {
      sync.wait %sems[%x, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    }
    %e = affine.apply affine_map<(d0) -> (d0 * 16384)>(%x)
    %v = memref.load %a[%e] : memref<?xf32>
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>, blocks_per_sm = 2 : i64}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, blocks_per_sm = 2 : i64}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: stage @c: 'sync.wait' waits for every thread of the block, but the branch on a condition on the thread index around it splits threads 0..127: those that do not take its side never arrive

// -----

// A barrier in a loop whose trip count is the thread's index: thread t arrives t times.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %o = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %y)
    memref.store %one, %out[%o] : memref<?xf32>
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %s = %c0 to %c4 step %c1 {
      sync.wait %sems[%x, %s] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    }
    %tid = gpu.thread_id x
    scf.for %j = %c0 to %tid step %c1 {
      gpu.barrier
    }
    %e = affine.apply affine_map<(d0) -> (d0 * 16384)>(%x)
    %v = memref.load %a[%e] : memref<?xf32>
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>, blocks_per_sm = 2 : i64}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, blocks_per_sm = 2 : i64}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: stage @c: 'gpu.barrier' waits for every thread of the block, but it is inside a loop whose bounds depend on the thread index: threads that run fewer iterations stop arriving

// -----

// A barrier under a condition carried from the thread index through a loop's iteration value.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %o = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %y)
    memref.store %one, %out[%o] : memref<?xf32>
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    scf.for %s = %c0 to %c4 step %c1 {
      sync.wait %sems[%x, %s] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    }
    %tid = gpu.thread_id x
    %c3 = arith.constant 3 : index
    %sum = scf.for %j = %c0 to %c3 step %c1 iter_args(%acc = %c0) -> (index) {
      %n = arith.addi %acc, %tid : index
      scf.yield %n : index
    }
    %odd = arith.remui %sum, %c2 : index
    %go = arith.cmpi eq, %odd, %c0 : index
    scf.if %go {
      gpu.barrier
    }
    %e = affine.apply affine_map<(d0) -> (d0 * 16384)>(%x)
    %v = memref.load %a[%e] : memref<?xf32>
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>, blocks_per_sm = 2 : i64}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, blocks_per_sm = 2 : i64}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {stream = 1 : i64}

// CHECK: sync-verify: stage @c: 'gpu.barrier' waits for every thread of the block, but it is inside a branch whose condition depends on the thread index: the threads that do not take it never arrive

// -----

// Proved: a branch on the thread index that every thread of the 128 takes, one on the warp
// index that every warp takes, a branch on the block's tile, and a named barrier of the 64
// threads a role branch holds.
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %o = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %y)
    memref.store %one, %out[%o] : memref<?xf32>
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %s = %c0 to %c4 step %c1 {
      sync.wait %sems[%x, %s] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    }
    %tid = gpu.thread_id x
    %c64 = arith.constant 64 : index
    %c32 = arith.constant 32 : index
    %c8 = arith.constant 8 : index
    %warp = arith.divui %tid, %c32 : index
    %warps = arith.cmpi ult, %warp, %c8 : index
    scf.if %warps {
      gpu.barrier
    }
    %c1024 = arith.constant 1024 : index
    %all = arith.cmpi ult, %tid, %c1024 : index
    scf.if %all {
      gpu.barrier
    }
    %first = arith.cmpi eq, %x, %c0 : index
    scf.if %first {
      gpu.barrier
    }
    %few = arith.cmpi ult, %tid, %c64 : index
    scf.if %few {
      tile.named_barrier 1, 64
    }
    %e = affine.apply affine_map<(d0) -> (d0 * 16384)>(%x)
    %v = memref.load %a[%e] : memref<?xf32>
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>, blocks_per_sm = 2 : i64}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, blocks_per_sm = 2 : i64}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
sync.launch @c {stream = 1 : i64}

// CHECK: sync.stage @c {blocks_per_sm = 2 : i64, sync.progress = "@p: co-resident (12 blocks, at most 264 = 132 SMs x 2 blocks per SM)", sync.verified = "proved"
