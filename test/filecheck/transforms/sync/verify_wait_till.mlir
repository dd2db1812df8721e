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

// -----

// Bulk copies after the barrier: thread 32 waits (generic), the barrier passes that on, and the
// issuing thread's tile.fence_proxy_async orders its TMA loads after it.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: !tile.tensor_map<16x64xf16, swizzle 128>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %x, %y = sync.tile : index, index
      %smem = memref.get_global @stage : memref<16x64xf16, 3>
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %col = arith.muli %y, %c64 : index
      %issuer = arith.cmpi eq, %tid, %c0 : index
      scf.if %issuer {
        tile.tma_store %smem[%c0, %c0], %out[%c0, %col] : memref<16x64xf16, 3>, !tile.tensor_map<16x64xf16, swizzle 128>
      }
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1> async_proxy : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: !tile.tensor_map<16x64xf16, swizzle 128>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %x = sync.tile : index
      %smem = memref.get_global @stage : memref<16x64xf16, 3>
      %bars = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %issuer = arith.cmpi eq, %tid, %c0 : index
      %w0 = arith.cmpi eq, %tid, %c32 : index
      scf.if %w0 {
        sync.wait %sp[%c0, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1> single_thread : memref<?xi32>
        sync.wait %sp[%c0, %c1] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1> single_thread : memref<?xi32>
      }
      gpu.barrier
      scf.if %issuer {
        tile.fence_proxy_async global
        tile.tma_load %a[%c0, %c0], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
        tile.tma_load %a[%c0, %c64], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
      }
      gpu.return
    }
    "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<16x64xf16, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 1, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 16, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 16>}
  sync.dependency @p -> @c operand 0 tiles (d0)[s0] -> (0, s0) forall s0 in [0, 2)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync.stage @c
// CHECK-SAME: verified = "proved"

// -----

// Without that fence the TMA loads are refused, although thread 32's waits are `async_proxy`:
// the proxy fence in a wait orders the waiting thread's copies, not another thread's after a
// barrier. The message says where the fence goes (it said to mark the waits async_proxy).
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: !tile.tensor_map<16x64xf16, swizzle 128>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %x, %y = sync.tile : index, index
      %smem = memref.get_global @stage : memref<16x64xf16, 3>
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %col = arith.muli %y, %c64 : index
      %issuer = arith.cmpi eq, %tid, %c0 : index
      scf.if %issuer {
        tile.tma_store %smem[%c0, %c0], %out[%c0, %col] : memref<16x64xf16, 3>, !tile.tensor_map<16x64xf16, swizzle 128>
      }
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1> async_proxy : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: !tile.tensor_map<16x64xf16, swizzle 128>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %x = sync.tile : index
      %smem = memref.get_global @stage : memref<16x64xf16, 3>
      %bars = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %issuer = arith.cmpi eq, %tid, %c0 : index
      %w0 = arith.cmpi eq, %tid, %c32 : index
      scf.if %w0 {
        sync.wait %sp[%c0, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
        sync.wait %sp[%c0, %c1] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
      }
      gpu.barrier
      scf.if %issuer {
        tile.tma_load %a[%c0, %c0], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
        tile.tma_load %a[%c0, %c64], %smem[%c0, %c0], %bars[%c0] : !tile.tensor_map<16x64xf16, swizzle 128>, memref<16x64xf16, 3>, memref<1xi64, 3>
      }
      gpu.return
    }
    "memref.global"() <{sym_name = "stage", sym_visibility = "private", type = memref<16x64xf16, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value}> : () -> ()
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 1, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 16, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 2 + d1), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 16>}
  sync.dependency @p -> @c operand 0 tiles (d0)[s0] -> (0, s0) forall s0 in [0, 2)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync-verify: consumer tile (0,) of @c: 'tile.tma_load' reads operand 0 in the async proxy, which the waits' generic acquire does not order: a wait of another thread reaches it through a gpu.barrier, which orders the generic proxy only: put a tile.fence_proxy_async global after the barrier in the thread issuing the copy
