// RUN: tilesync-opt %s -p "sync-one-launch{mixed_blocks=true}" | filecheck %s
// RUN: tilesync-opt %s -p sync-one-launch | filecheck %s --check-prefix=DEFAULT

// Blocks of two sizes join one launch only when asked (their kernel's block the larger).
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 256, 1, 1>, tile = array<i64: 128>}
  sync.dependency @produce -> @consume operand 0 tiles (d0) -> (d0)
  sync.launch @produce
  sync.launch @consume {stream = 1 : i64}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      gpu.return
    }
  }
}

// CHECK:      sync.launch @produce
// CHECK-NEXT: sync.launch @consume {fused = true}

// Without the option (and without stages=) the consumer keeps its launch.
// DEFAULT:      sync.launch @produce
// DEFAULT-NEXT: sync.launch @consume {stream = 1 : i64}
