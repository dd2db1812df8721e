// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132}' --verify-diagnostics | filecheck %s
// cuSync's wait_till (Fig. 3b): thread 0 spins with acquire, then the block's barrier, then
// every thread reads. The barrier orders the other threads' loads after thread 0's acquire
// (it is what a block-wide sync.wait lowers to): the `single_thread` wait in the branch on the
// thread index covers the loads after the next gpu.barrier of the whole block, and only those.

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
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> single_thread : memref<?xi32>
      }
      gpu.barrier
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)

  sync.launch @p
  sync.launch @c {stream = 1 : i64, coresident}
}
// CHECK: sync.stage @p
// CHECK-SAME: verified = "proved"
// CHECK: sync.stage @c
// CHECK-SAME: verified = "proved"

// -----

// No barrier after the wait: only thread 0's load is ordered.
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
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> single_thread : memref<?xi32>
      }
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)

  sync.launch @p
  sync.launch @c {stream = 1 : i64, coresident}
}
// CHECK: sync-verify: consumer tile (0,) of @c: 'memref.load' reads operand 0 with no sync.load_point before it, which reads producer tile (0,) of @p (semaphore 0), but no wait on that semaphore precedes it (the `single_thread` wait on it, in a branch on the thread index, covers the block's loads only after a gpu.barrier of the whole block that follows it)

// -----

// The barrier before the wait orders nothing after it.
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
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %tid, %c0 : index
      gpu.barrier
      scf.if %first {
        sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> single_thread : memref<?xi32>
      }
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)

  sync.launch @p
  sync.launch @c {stream = 1 : i64, coresident}
}
// CHECK: sync-verify: consumer tile (0,) of @c: 'memref.load' reads operand 0 with no sync.load_point before it, which reads producer tile (0,) of @p (semaphore 0), but no wait on that semaphore precedes it (the `single_thread` wait on it, in a branch on the thread index, covers the block's loads only after a gpu.barrier of the whole block that follows it)

// -----

// Thread 0 waits for the next tile's semaphore: the barrier passes that on, not the one read.
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
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %t1 = affine.apply affine_map<(d0) -> ((d0 + 1) mod 4)>(%t)
        sync.wait %sems[%t1] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> single_thread : memref<?xi32>
      }
      gpu.barrier
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)

  sync.launch @p
  sync.launch @c {stream = 1 : i64, coresident}
}
// CHECK: sync-verify: consumer tile (0,) of @c: 'memref.load' reads operand 0 with no sync.load_point before it, which reads producer tile (0,) of @p (semaphore 0), but no wait on that semaphore precedes it{{$}}
