// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132 limit=16}' --verify-diagnostics | filecheck %s
// Under `limit`, a 64-tile producer runs its boundary tiles only and the rest are taken to post
// as its policy says: the consumer, checked against those posts, is "boundary" like its
// producer (here tiles 31 and 32 swap semaphores, which only the full enumeration sees), and
// a producer so sampled without a policy, whose other tiles' semaphores nothing tells, is refused.

builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<4096xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %one = arith.constant 1.0 : f32
      %base = arith.muli %t, %c64 : index
      scf.for %i = %c0 to %c64 step %c1 {
        %o = arith.addi %base, %i : index
        memref.store %one, %out[%o] : memref<4096xf32>
      }
      %c31 = arith.constant 31 : index
      %is31 = arith.cmpi eq, %t, %c31 : index
      %is32 = arith.cmpi eq, %t, %c32 : index
      %s1 = arith.select %is31, %c32, %t : index
      %s = arith.select %is32, %c31, %s1 : index
      sync.post %sems[%s] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<4096xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %c1024 = arith.constant 1024 : index
      %first = arith.muli %t, %c16 : index
      scf.for %s = %c0 to %c16 step %c1 {
        %p = arith.addi %first, %s : index
        sync.wait %sems[%p] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      }
      %base = arith.muli %t, %c1024 : index
      scf.for %i = %c0 to %c1024 step %c1 {
        %o = arith.addi %base, %i : index
        %v = memref.load %a[%o] : memref<4096xf32>
      }
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 64>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 1024>}
  sync.dependency @p -> @c operand 0 tiles (d0)[s0] -> (d0 * 16 + s0) forall s0 in [0, 16)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync.stage @p {sync.verified = "boundary"
// CHECK: sync.stage @c {sync.progress = "@p: programmatic dependent launch", sync.verified = "boundary"

// -----

builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<4096xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %one = arith.constant 1.0 : f32
      %base = arith.muli %t, %c64 : index
      scf.for %i = %c0 to %c64 step %c1 {
        %o = arith.addi %base, %i : index
        memref.store %one, %out[%o] : memref<4096xf32>
      }
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<4096xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c62 = arith.constant 62 : index
      %c63 = arith.constant 63 : index
      %c4096 = arith.constant 4096 : index
      sync.wait %sems[%c0] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.wait %sems[%c1] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.wait %sems[%c62] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.wait %sems[%c63] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      scf.for %i = %c0 to %c4096 step %c1 {
        %v = memref.load %a[%i] : memref<4096xf32>
      }
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 64>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128>, tile = array<i64: 4096>}
  sync.dependency @p -> @c operand 0 tiles (d0)[s0] -> (s0) forall s0 in [0, 64)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_limit_boundary.mlir:92:3: sync-verify: producer @p has 64 tiles, more than the limit of 16 run one by one, and no policy: the semaphores the tiles not run post are unknown (raise `limit`, or give the stage its policy)

// -----

// @p (64 tiles) posts its start flag on every tile but tile 5 (an interior tile, not sampled
// with limit=16). The wait-kernel of @p on stream 1 waits for epoch x 64 flag posts and gets 63:
// it never ends, so @d (behind it on stream 1) never runs. Whether it ends is known only for the
// sampled tiles: every stage is "boundary", @q and @d (4 tiles, run in full) included.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<4096xf32>, %sems: memref<?xi32>, %flag: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "start_flag", "epoch"]} {
      %t = sync.tile : index
      %c0 = arith.constant 0 : index
      %c5 = arith.constant 5 : index
      %skip = arith.cmpi eq, %t, %c5 : index
      scf.if %skip {
      } else {
        sync.post %flag[%c0] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      }
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<4096xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<4096xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<4096xf32>
      gpu.return
    }
    gpu.func @q(%out: memref<256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@q", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<256xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @d(%a: memref<256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@q", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<256xf32>
      gpu.return
    }
    gpu.func @tilesync_wait_kernel(%f: memref<?xi32>, %target: i32) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>, sync.args = ["wait_flag", "wait_target"]} {
      %z = arith.constant 0 : index
      sync.wait %f[%z] epoch %target policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 64>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 64>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.stage @q {kernel = @k::@q, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @d {kernel = @k::@d, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.dependency @q -> @d operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c
  sync.launch @q {stream = 1 : i64}
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @d {stream = 1 : i64}
}
// CHECK: sync.stage @p
// CHECK-SAME: verified = "boundary"
// CHECK: sync.stage @c
// CHECK-SAME: verified = "boundary"
// CHECK: sync.stage @q
// CHECK-SAME: verified = "boundary"
// CHECK: sync.stage @d
// CHECK-SAME: verified = "boundary"
