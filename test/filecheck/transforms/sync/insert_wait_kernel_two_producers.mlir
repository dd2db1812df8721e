// RUN: tilesync-opt %s -p sync-insert-wait-kernel | filecheck %s
// RUN: tilesync-opt %s -p sync-insert-wait-kernel,sync-insert-wait-kernel | filecheck %s
// A consumer of two producers gets one wait-kernel per producer, and running the pass again
// adds none (it used to look only at the op right before the launch and leave four).
builtin.module {
  sync.stage @p {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.stage @q {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.stage @c {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 128>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.dependency @q -> @c operand 1 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @q {stream = 1 : i64}
  sync.launch @c {stream = 2 : i64}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel {
      gpu.return
    }
    gpu.func @consumer(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
// CHECK:      sync.launch @q {stream = 1 : i64}
// CHECK-NEXT: sync.wait_kernel @p {stream = 2 : i64}
// CHECK-NEXT: sync.wait_kernel @q {stream = 2 : i64}
// CHECK-NEXT: sync.launch @c {stream = 2 : i64}
// CHECK-NOT:  sync.wait_kernel @
// CHECK-COUNT-1: sync.post
// CHECK-NOT:  sync.post
// CHECK-COUNT-1: gpu.func @tilesync_wait_kernel
