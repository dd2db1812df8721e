// RUN: tilesync-opt %s --split-input-file -p sync-insert-wait-kernel --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p sync-use-pdl --verify-diagnostics | filecheck %s --check-prefix=PDL

// A consumer that is never launched: nothing to guard.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  gpu.module @k {
    gpu.func @f(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
// CHECK: sync-insert-wait-kernel: stage @c has no sync.launch, so there is no launch to order
// PDL: sync-use-pdl: stage @c has no sync.launch, so there is no launch to order

// -----

// A stage whose kernel symbol names nothing in the module (the dialect refuses it first).
builtin.module {
  sync.stage @p {kernel = @k::@missing, grid = array<i64: 4>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
  gpu.module @k {
    gpu.func @f(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
// CHECK: sync.stage: kernel @k::@missing is not defined
// PDL: sync.stage: kernel @k::@missing is not defined

// -----

// Class 3 of issue 13: stages that wait on each other's tiles. A wait-kernel cannot order
// either after the other; the pass used to build a circular launch plan silently.
builtin.module {
  sync.stage @a {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @a operand 0 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {stream = 1 : i64}
  gpu.module @k {
    gpu.func @f(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
// CHECK: sync-insert-wait-kernel: no wait-kernel can order @b after @a: the dependencies form a cycle @a -> @b -> @a: each stage of it waits for the next one's tiles, so none can finish first

// -----

// The producer launched behind its consumer on one stream: a wait-kernel before the consumer
// would wait for a producer that starts only after the consumer ends.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @c
  sync.launch @p
  gpu.module @k {
    gpu.func @f(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
// CHECK: sync-insert-wait-kernel: no wait-kernel can order @c after @p: the launch of @p cannot start before @c progresses: @p follows @c on stream 0
