// RUN: tilesync-opt %s --split-input-file -p sync-insert-wait-kernel | filecheck %s

// A consumer launched with PDL right after its producer on the producer's stream is already
// ordered: no wait-kernel.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.dependency @produce -> @consume operand 0 tiles (d0) -> (d0)
  sync.launch @produce
  sync.launch @consume {pdl = true}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel {
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel {
      gpu.return
    }
  }
}

// CHECK:      sync.launch @produce
// CHECK-NEXT: sync.launch @consume {pdl = true}
// CHECK-NOT:  sync.wait_kernel
// CHECK:      gpu.func @producer(%out: memref<?xf32>) kernel {

// -----

// PDL on another stream orders the consumer after nothing of the producer: it gets a
// wait-kernel like any consumer.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.dependency @produce -> @consume operand 0 tiles (d0) -> (d0)
  sync.launch @produce
  sync.launch @consume {stream = 1 : i64, pdl = true}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel {
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel {
      gpu.return
    }
  }
}

// CHECK:      sync.launch @produce
// CHECK-NEXT: sync.wait_kernel @produce {stream = 1 : i64}
// CHECK-NEXT: sync.launch @consume {stream = 1 : i64, pdl = true}
// CHECK:      gpu.func @producer(%out: memref<?xf32>, %{{.*}}: memref<?xi32>, %{{.*}}: i32) kernel attributes {sync.args = ["start_flag", "epoch"]}
