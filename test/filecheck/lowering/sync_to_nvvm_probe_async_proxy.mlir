// RUN: tilesync-opt %s -p 'convert-sync-to-nvvm{default_timeout_ns=5000 backoff_ns=32}' | filecheck %s

// A wait whose loads are bulk tensor copies (async_proxy) and that a probe may skip: the
// proxy fence follows the skippable wait, so the copies are ordered after the probe's acquire
// loads too where the probe found every semaphore ready and the wait did not run.
gpu.module @kernels {
  gpu.func @consumer(%sems: memref<?xi32>, %epoch: i32) kernel {
    %x, %y = sync.tile : index, index
    %ready = sync.probe %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0 - 1, s0)>] over [array<i64: 0, 8, 2>] clipped_to array<i64: 4, 8> : memref<?xi32>
    sync.wait %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> unless %ready async_proxy : memref<?xi32>
    gpu.return
  }
}

// CHECK-LABEL: gpu.func @consumer
// CHECK:         %[[SKIP:.*]] = arith.xori %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:    scf.if %[[SKIP]] {
// CHECK:           nvvm.ld acquire, gpu
// CHECK:           nvvm.barrier0
// CHECK-NOT:       fence.proxy
// CHECK:         }
// CHECK-NEXT:    nvvm.fence.proxy.async global
// CHECK-NEXT:    gpu.return
