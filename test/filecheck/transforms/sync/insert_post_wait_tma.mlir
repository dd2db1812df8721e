// RUN: tilesync-opt %s -p sync-select-policy{policy=tile},sync-insert-post-wait | filecheck %s

// A warp-specialized consumer: its producer thread's hook (single_thread, async_proxy) gets
// waits that spin in that thread and fence the async proxy; a partial-block store point
// (threads 256) becomes a post of those threads, and a tile stored by TMA copies
// (async_proxy) a post that waits for their writes.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @p(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y] threads 256 async_proxy
      gpu.return
    }
    gpu.func @g(%a: !tile.tensor_map<128x64xf16, swizzle 128>, %c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %kt = %c0 to %c8 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt single_thread async_proxy
      }
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 8>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 64>}
  sync.stage @g {kernel = @k::@g, grid = array<i64: 2, 4>, block = array<i64: 288, 1, 1>, tile = array<i64: 128, 128>}
  sync.dependency @p -> @g operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
}

// CHECK-LABEL: gpu.func @p(
// CHECK:         sync.post %sems_p[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> threads 256 async_proxy : memref<?xi32>
// CHECK-LABEL: gpu.func @g(
// CHECK:         scf.for %kt = %c0 to %c8 step %c1 {
// CHECK-NEXT:      sync.wait %sems_p[%x, %kt] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
// CHECK-NEXT:      sync.load_point operand 0 [%x, %y] step %kt single_thread async_proxy {sync.filled}
