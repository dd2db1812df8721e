// RUN: tilesync-opt %s --split-input-file --verify-diagnostics -p sync-fuse-launches | filecheck %s

// A launch declared fused by hand whose kernels cannot be one kernel is refused at the launch.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 64, 2, 1>, tile = array<i64: 128>}
  sync.launch @produce
  sync.launch @consume {fused = true}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 2, 1>} {
      gpu.return
    }
  }
}

// CHECK: sync-fuse-launches: @consume cannot join the launch of @produce: their kernels' blocks differ (64x2x1 and 128x1x1 threads), and not all are one-dimensional blocks of whole warps

// -----

// A kernel that reads a global outside shared memory cannot take it along.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.launch @produce
  sync.launch @consume {fused = true}
  gpu.module @k {
    "memref.global"() {sym_name = "table", sym_visibility = "private", type = memref<4xi32, 1>, initial_value} : () -> ()
    gpu.func @producer(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = memref.get_global @table : memref<4xi32, 1>
      gpu.return
    }
  }
}

// CHECK: sync-fuse-launches: @consume cannot join the launch of @produce: @consume: its kernel reads the global @table, not one in shared memory

// -----

// The one kernel's names are taken.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@produce_launch, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.launch @produce
  sync.launch @consume {fused = true}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
    gpu.func @produce_launch(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
}

// CHECK: sync-fuse-launches: the launch of @produce needs the names @produce_launch_module and @produce_launch for its kernel, and the program uses one
