// RUN: tilesync-opt %s --split-input-file --verify-diagnostics -p "sync-one-launch{stages=consume}" | filecheck %s

// Kernels of blocks that differ, not all one-dimensional, cannot be one kernel.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 64, 2, 1>, tile = array<i64: 128>}
  sync.dependency @produce -> @consume operand 0 tiles (d0) -> (d0)
  sync.launch @produce
  sync.launch @consume {stream = 1 : i64}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 2, 1>} {
      gpu.return
    }
  }
}

// CHECK: sync-one-launch: @consume cannot join its producers' launch: their kernels' blocks differ (64x2x1 and 128x1x1 threads), and not all are one-dimensional blocks of whole warps

// -----

// Producers in two launches: no one launch holds them both.
builtin.module {
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.dependency @a -> @consume operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @consume operand 1 tiles (d0) -> (d0)
  sync.launch @a
  sync.launch @b {stream = 1 : i64}
  sync.launch @consume {stream = 2 : i64}
  gpu.module @k {
    gpu.func @f(%x: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
}

// CHECK: sync-one-launch: @consume cannot join its producers' launch: its producers run in different launches

// -----

// A tile order from a table does not follow from a ticket.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.dependency @produce -> @consume operand 0 tiles (d0) -> (d0)
  sync.launch @produce
  sync.launch @consume
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = sync.tile order #sync.order<table<1, 0>> : index
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
}

// CHECK: sync-one-launch: @consume cannot join its producers' launch: @produce's kernel takes its tiles in a table order (only row-major and column-major orders follow from a ticket)

// -----

// Blocks of two sizes: one kernel would run both in the larger; not without mixed_blocks=true
// (one_launch_mixed_blocks.mlir).
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

// CHECK: sync-one-launch: @consume cannot join its producers' launch: their blocks differ (128x1x1 and 256x1x1 threads): one kernel would run them all in the largest, measured slower than PDL (mixed_blocks=true to join anyway)
