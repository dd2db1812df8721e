// RUN: tilesync-opt %s -p sync-insert-wait-kernel,sync-one-launch | filecheck %s
// RUN: tilesync-opt %s -p "sync-one-launch{stages=last}" | filecheck %s --check-prefix=ONLY

// A chain of three stages on two streams, kernels of one block size: each consumer joins its
// producer's launch in turn, so the chain becomes one launch on the first stage's stream.
builtin.module {
  sync.stage @first {kernel = @k::@first, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @middle {kernel = @k::@middle, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @last {kernel = @k::@last, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64>}
  sync.dependency @first -> @middle operand 0 tiles (d0, d1) -> (d0, d1)
  sync.dependency @middle -> @last operand 0 tiles (d0)[s0] -> (d0 floordiv 2, s0) forall s0 in [0, 2)
  sync.launch @first {stream = 0 : i64, priority = -1 : i64}
  sync.launch @middle {stream = 1 : i64}
  sync.launch @last {stream = 2 : i64, pdl = true}
  gpu.module @k {
    gpu.func @first(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %x, %y = sync.tile : index, index
      gpu.return
    }
    gpu.func @middle(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %x, %y = sync.tile : index, index
      gpu.return
    }
    gpu.func @last(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %x = sync.tile : index
      gpu.return
    }
  }
}

// The wait-kernels sync-insert-wait-kernel put before the consumers go, and the producers'
// start flags with them: the launch's tickets order the stages.
// CHECK:      sync.launch @first {priority = -1 : i64}
// CHECK-NEXT: sync.launch @middle {fused = true}
// CHECK-NEXT: sync.launch @last {fused = true}
// CHECK-NOT:  sync.wait_kernel
// CHECK:      gpu.func @first(%out: memref<?xf32>, %{{.*}}: i32) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, sync.args = ["epoch"]} {
// CHECK-NEXT:   %x, %y = sync.tile : index, index
// CHECK:      gpu.func @middle(%in: memref<?xf32>, %{{.*}}: i32) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, sync.args = ["epoch"]} {
// CHECK-NEXT:   %x, %y = sync.tile : index, index

// Only @last asked: its producer @middle runs alone, so @last joins @middle's launch (its pdl,
// its stream, its place in program order).
// ONLY:      sync.launch @first {priority = -1 : i64}
// ONLY-NEXT: sync.launch @middle {stream = 1 : i64}
// ONLY-NEXT: sync.launch @last {stream = 1 : i64, fused = true}
