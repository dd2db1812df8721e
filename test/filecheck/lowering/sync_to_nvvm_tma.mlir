// RUN: tilesync-opt %s -p convert-sync-to-nvvm | filecheck %s

// A single-thread wait spins in the executing thread (no leader test, no block barrier); an
// async-proxy wait then fences the proxies for the bulk copies that follow. A post by the
// first 256 threads synchronizes them on named barrier 1, then thread 0 releases; where TMA
// copies stored the tile (async_proxy), each thread first commits its copies (a store issued
// after its last commit is in no group that wait_group waits for), waits for their writes and
// fences the proxies.
gpu.module @kernels {
  gpu.func @copier(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x, %y = sync.tile : index, index
    sync.wait %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> single_thread async_proxy : memref<?xi32>
    gpu.return
  }
  gpu.func @storer(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> threads 256 : memref<?xi32>
    gpu.return
  }
  gpu.func @bulk_storer(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> threads 256 async_proxy : memref<?xi32>
    gpu.return
  }
  gpu.func @block_copier(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x = sync.tile : index
    sync.wait %sems[%x] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> async_proxy : memref<?xi32>
    gpu.return
  }
}

// CHECK-LABEL: gpu.func @copier
// CHECK-NOT:     gpu.thread_id
// CHECK:         nvvm.ld acquire, gpu
// CHECK-NOT:     gpu.thread_id
// CHECK:         scf.if
// CHECK-NEXT:      nvvm.read.ptx.sreg.globaltimer
// CHECK-NEXT:      scf.while () : () -> () {
// CHECK-NEXT:        nvvm.ld acquire, gpu
// CHECK:           } do {
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NOT:     nvvm.barrier0
// CHECK-NEXT:    nvvm.fence.proxy.async global
// CHECK-NEXT:    gpu.return
// CHECK-LABEL: gpu.func @storer
// CHECK:         nvvm.barrier.sync 1, 256
// CHECK-NOT:     nvvm.barrier0
// CHECK:         scf.if
// CHECK:           nvvm.fence acq_rel, gpu
// CHECK:           nvvm.red add relaxed, gpu
// CHECK-LABEL: gpu.func @bulk_storer
// CHECK:         nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:    nvvm.cp.async.bulk.wait.group 0
// CHECK-NEXT:    nvvm.fence.proxy.async global
// CHECK-NEXT:    nvvm.barrier.sync 1, 256
// CHECK:         scf.if
// CHECK:           nvvm.fence acq_rel, gpu
// CHECK:           nvvm.red add relaxed, gpu
// CHECK-LABEL: gpu.func @block_copier
// CHECK:         scf.if
// CHECK:           nvvm.ld acquire, gpu
// CHECK:         nvvm.barrier0
// CHECK-NEXT:    nvvm.fence.proxy.async global
