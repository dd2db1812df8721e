// RUN: tilesync-opt %s -p sync-insert-wait-kernel | filecheck %s
// RUN: tilesync-opt %s -p sync-insert-wait-kernel,sync-insert-wait-kernel | filecheck %s --check-prefix=TWICE

builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.dependency @produce -> @consume operand 0 tiles (d0) -> (d0)
  sync.launch @produce {stream = 0 : i64, priority = -1 : i64}
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

// CHECK:      sync.launch @produce
// CHECK-NEXT: sync.wait_kernel @produce {stream = 1 : i64}
// CHECK-NEXT: sync.launch @consume {stream = 1 : i64}
// Every producer block posts its start flag on entry.
// CHECK:      gpu.func @producer(%out: memref<?xf32>, %[[FLAG:.*]]: memref<?xi32>, %[[EPOCH:.*]]: i32) kernel attributes {sync.args = ["start_flag", "epoch"]} {
// CHECK-NEXT:   %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:   sync.post %[[FLAG]][%[[ZERO]]] epoch %[[EPOCH]] policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
// CHECK-NEXT:   %t = sync.tile : index
// The consumer is untouched; one wait-kernel per module spins on the flag.
// CHECK:      gpu.func @consumer(%in: memref<?xf32>) kernel {
// CHECK:      gpu.func @tilesync_wait_kernel(%{{.*}}: memref<?xi32>, %{{.*}}: i32) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>, sync.args = ["wait_flag", "wait_target"]} {
// CHECK:        sync.wait %{{.*}}[%{{.*}}] epoch %{{.*}} policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>

// Running the pass again changes nothing.
// TWICE-COUNT-1: sync.wait_kernel
// TWICE-NOT:     sync.wait_kernel
// TWICE-COUNT-1: sync.post
// TWICE-NOT:     sync.post
// TWICE-COUNT-1: gpu.func @tilesync_wait_kernel
