// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-epoch-in-memory,sync-verify | filecheck %s

// sync-verify before or after sync-epoch-in-memory: the epoch a wait compares against is the
// kernel's parameter before, and the word loaded from the epoch counter after.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      sync.load_point operand 0 [%t]
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {pdl = true}
}

// CHECK:     gpu.func @f_c(
// CHECK:       %[[EPOCH:.*]] = memref.load
// CHECK:       sync.wait %sems_p[%{{.*}}] epoch %[[EPOCH]]
// CHECK:     sync.stage @c {sync.progress = "@p: programmatic dependent launch", sync.verified = "proved"

// -----

// The consumer on a stream of its own behind a wait-kernel, whose target is now the loaded
// epoch times the producer's blocks.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      sync.load_point operand 0 [%t]
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}

// CHECK:     sync.stage @c {sync.progress = "@p: wait-kernel", sync.verified = "proved"
// CHECK:     sync.wait_kernel @p {stream = 1 : i64}
