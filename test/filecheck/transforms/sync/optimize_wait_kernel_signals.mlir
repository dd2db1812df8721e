// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-annotate-occupancy{sms=132},sync-drop-wait-kernel,sync-verify{sms=132}' | filecheck %s

// W drops the only wait-kernel (a few blocks, far from a wave): the producer no longer posts
// a start flag, and the wait-kernel function goes with it.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      sync.load_point operand 0 [%t]
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}

// CHECK:     gpu.func @f(
// CHECK-SAME:  sync.args = ["sems:@p", "epoch"]
// CHECK-NOT:   tilesync_wait_kernel
// CHECK-NOT:   sync.wait_kernel
// CHECK:     sync.stage @c {{.*}}sync.progress = "@p: co-resident

// -----

// Too many blocks for W: the wait-kernel stays, and so does the producer's start flag.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      sync.load_point operand 0 [%t]
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@f, grid = array<i64: 100000>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 100000>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}

// CHECK:     gpu.func @f(
// CHECK-SAME:  sync.args = ["sems:@p", "epoch", "start_flag"]
// CHECK:     gpu.func @tilesync_wait_kernel(
// CHECK:     sync.stage @c {{.*}}sync.progress = "@p: wait-kernel"
// CHECK:     sync.wait_kernel @p {stream = 1 : i64}
