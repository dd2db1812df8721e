// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132}' | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=132 limit=4}' | filecheck %s --check-prefix=BOUNDARY
// RUN: tilesync-opt %s --split-input-file -p 'sync-verify{sms=8}' --verify-diagnostics | filecheck %s --check-prefix=SMALL

// Hand-written synchronization (no hooks) is proved too: the raw loads of operand 0 must be
// covered for the whole tile. TileSync, one wait per tile read in a loop; co-residency from
// blocks_per_sm: 8 + 4 blocks at 2 per SM, of the 264 that fit on 132 SMs.
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

// CHECK:      sync.stage @p {blocks_per_sm = 2 : i64, sync.verified = "proved", kernel = @k::@p
// CHECK-NEXT: sync.stage @c {blocks_per_sm = 2 : i64, sync.progress = "@p: co-resident (12 blocks, at most 264 = 132 SMs x 2 blocks per SM)", sync.verified = "proved", kernel = @k::@c

// With at most 4 tiles enumerated, the 8-tile producer and 4-tile consumer: the consumer is
// still enumerated, the producer only on its boundary tiles, so the consumer's waits are
// checked against posts partly taken on trust: both are "boundary".
// BOUNDARY:      sync.stage @p {blocks_per_sm = 2 : i64, sync.verified = "boundary"
// BOUNDARY-NEXT: sync.stage @c {blocks_per_sm = 2 : i64, sync.progress = "@p: co-resident (12 blocks, at most 264 = 132 SMs x 2 blocks per SM)", sync.verified = "boundary"

// On 8 SMs... still fits (12 of 16).
// SMALL: sync.stage @c {blocks_per_sm = 2 : i64, sync.progress = "@p: co-resident (12 blocks, at most 16 = 8 SMs x 2 blocks per SM)"

// -----

// Does not fit on 8 SMs: 40 + 8 blocks at 2 per SM need 24 SMs; fits on 132. (The two
// streams keep stream order out of it.)
gpu.module @k {
  gpu.func @p(%sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %t = sync.tile : index
    sync.post %sems[%t] epoch %epoch policy #sync.policy<Custom (d0) -> (0), posts = 40> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %t = sync.tile : index
    %c0 = arith.constant 0 : index
    sync.wait %sems[%c0] epoch %epoch policy #sync.policy<Custom (d0) -> (0), posts = 40> : memref<?xi32>
    sync.load_point operand 0 [%t]
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 40>, block = array<i64: 128>, tile = array<i64: 64>, policy = #sync.policy<Custom (d0) -> (0), posts = 40>, blocks_per_sm = 2 : i64}
sync.stage @c {kernel = @k::@c, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 64>, blocks_per_sm = 2 : i64}
sync.dependency @p -> @c operand 0 tiles (d0)[s0] -> (s0) forall s0 in [0, 40)
sync.launch @p
sync.launch @c {stream = 1 : i64}

// CHECK:      sync.stage @c {blocks_per_sm = 2 : i64, sync.progress = "@p: co-resident (48 blocks, at most 264 = 132 SMs x 2 blocks per SM)", sync.verified = "proved"
// SMALL:      verify.mlir:71:1: sync-verify: no forward-progress guarantee for @c waiting on @p
