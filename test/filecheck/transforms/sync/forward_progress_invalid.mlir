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
