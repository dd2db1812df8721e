// RUN: tilesync-opt %s -p convert-sync-to-nvvm | filecheck %s
// Ordered tiles: thread 0 takes a slot from a global counter, the block reads it from shared
// memory, and the tile comes from the order (arithmetic, or an uploaded table).

gpu.module @kernels {
  gpu.func @column_major(%out: memref<?xindex>) kernel {
    %x, %y = sync.tile order #sync.order<column_major> : index, index
    memref.store %x, %out[%y] : memref<?xindex>
    gpu.return
  }
  gpu.func @tabled(%out: memref<?xindex>) kernel {
    %x = sync.tile order #sync.order<table<3, 1, 2, 0>> : index
    memref.store %x, %out[%x] : memref<?xindex>
    gpu.return
  }
  gpu.func @plain(%out: memref<?xindex>) kernel {
    %x = sync.tile : index
    memref.store %x, %out[%x] : memref<?xindex>
    gpu.return
  }
}

// CHECK:       "memref.global"() <{sym_name = "__tilesync_tile_slot", type = memref<1xi32, 3 : i64>, initial_value, sym_visibility = "private"}>
// The counter is 64-bit (a 32-bit one wraps, and where the block count does not divide 2^32
// the launch across the wrap hands out slots twice and others never); thread 0 reduces it.
// CHECK-LABEL: gpu.func @column_major(%out: memref<?xindex>, %{{.*}}: memref<1xi64>) kernel attributes {sync.args = ["tile_counter"]}
// CHECK:         %[[SLOT:.*]] = memref.get_global @__tilesync_tile_slot
// CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:    %[[G0:.*]] = gpu.grid_dim x
// CHECK:         %[[XY:.*]] = arith.muli %[[G0]], %{{.*}} : index
// CHECK-NEXT:    %[[BLOCKS:.*]] = arith.muli %[[XY]], %{{.*}} : index
// CHECK:         scf.if
// CHECK:           %[[COUNT:.*]] = nvvm.atom add relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64
// CHECK-NEXT:      %[[BLOCKS64:.*]] = arith.index_cast %[[BLOCKS]] : index to i64
// CHECK-NEXT:      %[[MOD:.*]] = arith.remui %[[COUNT]], %[[BLOCKS64]] : i64
// CHECK-NEXT:      %[[MOD32:.*]] = arith.trunci %[[MOD]] : i64 to i32
// CHECK-NEXT:      memref.store %[[MOD32]], %[[SLOT]]
// CHECK:         nvvm.barrier0
// CHECK-NEXT:    %[[SEEN:.*]] = memref.load %[[SLOT]]
// CHECK-NEXT:    %[[LINEAR:.*]] = arith.index_cast %[[SEEN]] : i32 to index
// CHECK-NEXT:    %[[X:.*]] = arith.remui %[[LINEAR]], %[[G0]] : index
// CHECK-NEXT:    %[[Y:.*]] = arith.divui %[[LINEAR]], %[[G0]] : index
// CHECK-NEXT:    memref.store %[[X]], %out[%[[Y]]]

// CHECK-LABEL: gpu.func @tabled
// CHECK-SAME:    (%out: memref<?xindex>, %{{.*}}: memref<1xi64>, %[[TABLE:[^:]*]]: memref<?xi32>) kernel attributes {sync.args = ["tile_counter", "order_table"], sync.order_table = array<i32: 3, 1, 2, 0>}
// CHECK:         %[[ID:.*]] = memref.load %[[TABLE]][%{{.*}}] : memref<?xi32>
// CHECK-NEXT:    %[[T:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK-NEXT:    memref.store %[[T]], %out[%[[T]]]

// CHECK-LABEL: gpu.func @plain(%out: memref<?xindex>) kernel {
// CHECK-NEXT:    %[[B:.*]] = gpu.block_id x
// CHECK-NEXT:    memref.store %[[B]], %out[%[[B]]]

// -----
// A stage's order reaches the sync.tile ops of its kernel.
// RUN: tilesync-opt %s --split-input-file -p convert-sync-to-nvvm | filecheck %s --check-prefix=STAGE
builtin.module {
  sync.stage @s {kernel = @m::@staged, grid = array<i64: 4, 4>, block = array<i64: 32>, tile = array<i64: 8, 8>, order = #sync.order<column_major>}
  gpu.module @m {
    gpu.func @staged(%out: memref<?xindex>) kernel {
      %x, %y = sync.tile : index, index
      memref.store %x, %out[%y] : memref<?xindex>
      gpu.return
    }
  }
}
// STAGE-LABEL: gpu.func @staged
// STAGE-SAME:    sync.args = ["tile_counter"]
// STAGE:         nvvm.atom add relaxed, gpu

// -----
// A kernel that asks for its tile twice (an epilogue recomputing it) takes one ticket: the
// second sync.tile reads the first's coordinates, so the block stores and posts the tile it
// computed.
builtin.module {
  sync.stage @s {kernel = @m::@twice, grid = array<i64: 4, 4>, block = array<i64: 32>, tile = array<i64: 8, 8>, order = #sync.order<column_major>}
  gpu.module @m {
    gpu.func @twice(%out: memref<?xindex>) kernel {
      %x, %y = sync.tile : index, index
      memref.store %x, %out[%y] : memref<?xindex>
      %x2, %y2 = sync.tile : index, index
      memref.store %y2, %out[%x2] : memref<?xindex>
      gpu.return
    }
  }
}
// STAGE-LABEL: gpu.func @twice
// STAGE:         nvvm.atom add relaxed, gpu
// STAGE-NOT:     nvvm.atom
// STAGE:         gpu.return
