// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132}' --verify-diagnostics | filecheck %s
// A post or wait at a semaphore past the end of its stage's buffer touches another buffer's
// words (the runtime allocates StageOp.semaphores: num_semaphores, else the policy's count,
// else one a tile). Each of these was proved.

// No policy: one semaphore a tile (4), and the posts go to 4..7.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<256xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<Custom (d0) -> (d0 + 4), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<Custom (d0) -> (d0 + 4), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<256xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync-verify: producer @p, tile (0,) posts semaphore 4, but its buffer has 4 (its num_semaphores, else its policy's count, else one a tile): the post writes past its end

// -----

// num_semaphores = 2 for a TileSync of 4 tiles.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<256xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<256xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>, num_semaphores = 2}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: sync-verify: producer @p, tile (2,) posts semaphore 2, but its buffer has 2 (its num_semaphores, else its policy's count, else one a tile): the post writes past its end

// -----

// The consumer waits at 4..7 besides its own tile's semaphore.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<256xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<Custom (d0) -> (d0 + 4), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<256xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {pdl = true}
}
// CHECK: verify_semaphore_bounds_invalid.mlir:[[# @LINE - 12]]:7: sync-verify: consumer tile (0,) of @c waits on semaphore 4 of @p, whose buffer has 4: it reads past its end
