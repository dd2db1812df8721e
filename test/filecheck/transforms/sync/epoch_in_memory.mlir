// RUN: tilesync-opt %S/insert_wait_kernel.mlir -p sync-insert-wait-kernel,sync-epoch-in-memory | filecheck %s
// Kernels load the epoch from a device word (a graph replays parameters as captured); the
// wait-kernel computes its target from it; one kernel bumps it at the start of every run.

// CHECK:      gpu.func @producer(%out: memref<?xf32>, %[[FLAG:.*]]: memref<?xi32>, %[[CTR:.*]]: memref<1xi32>) kernel attributes {sync.args = ["start_flag", "epoch_counter"]} {
// CHECK-NEXT:   %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:   %[[E:.*]] = memref.load %[[CTR]][%[[Z]]] : memref<1xi32>
// CHECK:        sync.post %[[FLAG]][%{{.*}}] epoch %[[E]]
// CHECK:      gpu.func @tilesync_wait_kernel(%[[WF:.*]]: memref<?xi32>, %[[WC:.*]]: memref<1xi32>, %[[BLOCKS:.*]]: i32) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>, sync.args = ["wait_flag", "epoch_counter", "wait_blocks"]} {
// CHECK:        %[[WE:.*]] = memref.load %[[WC]]
// CHECK-NEXT:   %[[TARGET:.*]] = arith.muli %[[WE]], %[[BLOCKS]] : i32
// CHECK:        sync.wait %[[WF]][%{{.*}}] epoch %[[TARGET]]
// CHECK:      gpu.func @tilesync_next_epoch(%[[C:.*]]: memref<1xi32>) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>, sync.args = ["epoch_counter"]} {
// CHECK:        %[[OLD:.*]] = memref.load %[[C]]
// CHECK-NEXT:   %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:   %[[NEW:.*]] = arith.addi %[[OLD]], %[[ONE]] : i32
// CHECK-NEXT:   memref.store %[[NEW]], %[[C]]
