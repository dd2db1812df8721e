// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s

// The hooks of a warp-specialized kernel: one thread copies through tensor maps (its loads
// are the async proxy's), the consumer warpgroups (256 threads) store the tile; the waits and
// posts the passes put there keep who takes part.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm(%a: !tile.tensor_map<128x64xf16, swizzle 128>, %c: memref<?xf16>,
                   %sems: memref<?xi32>, %epoch: i32) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y] step %y single_thread async_proxy
      sync.wait %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
      sync.store_point [%x, %y] threads 256
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> threads 256 : memref<?xi32>
      sync.store_point [%x, %y] threads 256 async_proxy
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> threads 256 async_proxy : memref<?xi32>
      gpu.return
    }
  }
}

// CHECK:      sync.load_point operand 0 [%x, %y] step %y single_thread async_proxy{{$}}
// CHECK-NEXT: sync.wait %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
// CHECK-NEXT: sync.store_point [%x, %y] threads 256{{$}}
// CHECK-NEXT: sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> threads 256 : memref<?xi32>
// CHECK-NEXT: sync.store_point [%x, %y] threads 256 async_proxy{{$}}
// CHECK-NEXT: sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> threads 256 async_proxy : memref<?xi32>
