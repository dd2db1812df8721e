// RUN: tilesync-opt %s -p 'sync-fuse-launches,sync-verify{sms=132}' --verify-diagnostics | filecheck %s
// sync-verify after sync-fuse-launches: the stages' kernels are lone returns, their hooks run
// in a branch of @p_launch that the proof does not follow. Refused, naming the order of the
// passes (it said "posts 0 times per launch" of a program it proves before the fusion).

gpu.module @k {
  gpu.func @p(%out: memref<128x256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c64 = arith.constant 64 : index
    %r = arith.muli %x, %c64 : index
    %c = arith.muli %y, %c64 : index
    %one = arith.constant 1.0 : f32
    memref.store %one, %out[%r, %c] : memref<128x256xf32>
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<128x256xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, sync.args = ["sems:@p", "epoch"]} {
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
sync.launch @c {fused = true}

// CHECK: verify_after_fusion_invalid.mlir:[[# @LINE - 6]]:1: sync-verify: stage @p's kernel was fused into @p_launch_module::@p_launch (its body is a lone return): sync-verify runs before sync-fuse-launches, on the stages' own kernels
