// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=4}' --verify-diagnostics | filecheck %s
// A `coresident` declaration that no device can hold, without blocks_per_sm: an SM holds at
// most 32 blocks and 64 warps on every target, so blocks of 1024 threads fit 2 to an SM,
// 8 on 4 SMs. @c's blocks would fill the SMs and spin on tiles of @p never dispatched. Each
// was proved ("co-resident (declared)").

// @p alone: 16 blocks.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<1024xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<1024xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<1024xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<1024xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 16>, block = array<i64: 1024>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 16>, block = array<i64: 1024>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64, coresident}
}
// CHECK: sync-verify: no forward-progress guarantee for @c waiting on @p: @c is declared coresident, but @p alone has 16 blocks, more than 4 SMs x 2 blocks per SM: the declaration does not hold

// -----

// Each stage fits alone (6 blocks), not both: 12 x 32 warps.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<384xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<384xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<384xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<384xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 6>, block = array<i64: 1024>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 6>, block = array<i64: 1024>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64, coresident}
}
// CHECK: sync-verify: no forward-progress guarantee for @c waiting on @p: @c is declared coresident, but the stages' blocks have 384 warps, more than 4 SMs x 64 warps per SM: the declaration does not hold

// -----

// blocks_per_sm = 4 for blocks of 1024 threads, of which an SM holds 2: counted on those slots,
// 8 + 8 blocks were "co-resident" on 4 SMs (proved); only 8 are.
builtin.module {
  gpu.module @k {
    gpu.func @p(%out: memref<512xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      %one = arith.constant 1.0 : f32
      %o = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      memref.store %one, %out[%o] : memref<512xf32>
      sync.post %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
    gpu.func @c(%a: memref<512xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
      %t = sync.tile : index
      sync.wait %sems[%t] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      %e = affine.apply affine_map<(d0) -> (d0 * 64)>(%t)
      %v = memref.load %a[%e] : memref<512xf32>
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 8>, block = array<i64: 1024>, tile = array<i64: 64>, policy = #sync.policy<TileSync (d0) -> (d0), posts = 1>, blocks_per_sm = 4 : i64}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 1024>, tile = array<i64: 64>, blocks_per_sm = 4 : i64}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}
// CHECK: verify_coresident_invalid.mlir:[[# @LINE - 6]]:3: sync-verify: stage @p has blocks_per_sm = 4, but an SM holds at most 2 blocks of 1024 threads
