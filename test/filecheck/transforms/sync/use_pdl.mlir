// RUN: tilesync-opt %s -p sync-use-pdl | filecheck %s

builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.dependency @produce -> @consume operand 0 tiles (d0) -> (d0)
  sync.launch @produce {stream = 2 : i64}
  sync.wait_kernel @produce {stream = 1 : i64}
  sync.launch @consume {stream = 1 : i64}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel {
      %t = sync.tile : index
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel {
      %t = sync.tile : index
      gpu.return
    }
  }
}

// The consumer joins the producer's stream as its programmatic dependent; no wait-kernel.
// CHECK:      sync.launch @produce {stream = 2 : i64}
// CHECK-NEXT: sync.launch @consume {stream = 2 : i64, pdl = true}
// CHECK-NOT:  sync.wait_kernel
// Every producer block triggers on entry, so the consumer grid waits for all of them to start.
// CHECK:      gpu.func @producer(%out: memref<?xf32>) kernel {
// CHECK-NEXT:   nvvm.griddepcontrol.launch_dependents
// CHECK-NEXT:   %t = sync.tile : index
// CHECK:      gpu.func @consumer(%in: memref<?xf32>) kernel {
// CHECK-NEXT:   %t = sync.tile : index
