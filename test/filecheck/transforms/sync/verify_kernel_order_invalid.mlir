// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait,sync-verify --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p sync-generate-policies,sync-insert-post-wait,convert-sync-to-nvvm --verify-diagnostics | filecheck %s --check-prefix=LOWER

// The lowering hands a kernel's tiles out in its own sync.tile order: that order must be a
// permutation of the stage's grid (a table listing tile 0 six times would leave five tiles
// never computed and their consumers waiting forever) ...
builtin.module {
  gpu.module @k {
    gpu.func @p(%a0: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t0, %t1 = sync.tile order #sync.order<table<0, 0, 0, 0, 0, 0>> : index, index
      sync.store_point [%t0, %t1]
      gpu.return
    }
    gpu.func @c(%a0: memref<?xf32>, %a1: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t0, %t1 = sync.tile : index, index
      sync.load_point operand 0 [%t0, %t1]
      sync.store_point [%t0, %t1]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 32, 32>, order = #sync.order<row_major>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 32, 32>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @p {priority = -1 : i64}
  sync.launch @c {pdl = true}
}

// CHECK: verify_kernel_order_invalid.mlir:{{[0-9]+}}:7: sync-verify: stage @p takes its tiles in its sync.tile order (@k::@p): tile order table lists tile 0 twice: not a permutation of grid (2, 3)
// LOWER: verify_kernel_order_invalid.mlir:{{[0-9]+}}:7: convert-sync-to-nvvm: stage @p takes its tiles in its sync.tile order (@k::@p): tile order table lists tile 0 twice: not a permutation of grid (2, 3)

// -----

// ... and the stage's order where it names one: column-major is not this table.
builtin.module {
  gpu.module @k {
    gpu.func @p(%a0: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t0, %t1 = sync.tile order #sync.order<column_major> : index, index
      sync.store_point [%t0, %t1]
      gpu.return
    }
    gpu.func @c(%a0: memref<?xf32>, %a1: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t0, %t1 = sync.tile : index, index
      sync.load_point operand 0 [%t0, %t1]
      sync.store_point [%t0, %t1]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 32, 32>, order = #sync.order<table<0, 2, 4, 1, 3, 5>>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 32, 32>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @p {priority = -1 : i64}
  sync.launch @c {pdl = true}
}

// CHECK: verify_kernel_order_invalid.mlir:{{[0-9]+}}:7: sync-verify: stage @p names tile order #sync.order<table<0, 2, 4, 1, 3, 5>> but its kernel @k::@p hands tiles out in its sync.tile order, #sync.order<column_major>
// LOWER: verify_kernel_order_invalid.mlir:{{[0-9]+}}:7: convert-sync-to-nvvm: stage @p names tile order

// -----

// The same permutation written twice (column-major of a 2 x 3 grid as a table) is one order.
builtin.module {
  gpu.module @k {
    gpu.func @p(%a0: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t0, %t1 = sync.tile order #sync.order<column_major> : index, index
      sync.store_point [%t0, %t1]
      gpu.return
    }
    gpu.func @c(%a0: memref<?xf32>, %a1: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t0, %t1 = sync.tile : index, index
      sync.load_point operand 0 [%t0, %t1]
      sync.store_point [%t0, %t1]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 32, 32>, order = #sync.order<table<0, 3, 1, 4, 2, 5>>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 32, 32>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @p {priority = -1 : i64}
  sync.launch @c {pdl = true}
}

// CHECK: sync.stage @p {{.*}}sync.verified = "proved"
