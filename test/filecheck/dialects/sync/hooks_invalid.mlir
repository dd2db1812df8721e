// RUN: tilesync-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

gpu.module @k {
  gpu.func @f(%a: memref<?xf32>) kernel {
    %t = sync.tile : index
    sync.load_point operand 1 [%t]
    gpu.return
  }
}

// CHECK: sync.load_point: operand 1 is not an argument of the enclosing function, which has 1

// -----

gpu.module @k {
  gpu.func @f(%a: memref<?xf32>, %n: i32) kernel {
    %t = sync.tile : index
    sync.load_point operand 1 [%t]
    gpu.return
  }
}

// CHECK: sync.load_point: operand 1 must be a memref or tensor map argument (the buffer a producer writes), got i32

// -----

gpu.module @k {
  gpu.func @f(%a: memref<?xf32>) kernel {
    %x, %y, %z = sync.tile : index, index, index
    "sync.load_point"(%x, %y, %z, %x) <{operand = #builtin.int<0>, operandSegmentSizes = array<i32: 4, 0>}> : (index, index, index, index) -> ()
    gpu.return
  }
}

// CHECK: sync.load_point: a tile has 1 to 3 coordinates, got 4

// -----

gpu.module @k {
  gpu.func @f(%a: memref<?xf32>) kernel {
    "sync.store_point"() : () -> ()
    gpu.return
  }
}

// CHECK: sync.store_point: a tile has 1 to 3 coordinates, got 0

// -----

gpu.module @k {
  gpu.func @f(%a: memref<?xf32>) kernel {
    %t = sync.tile : index
    %s = arith.constant 0 : i32
    "sync.load_point"(%t, %s) <{operand = #builtin.int<0>, operandSegmentSizes = array<i32: 1, 1>}> : (index, i32) -> ()
    gpu.return
  }
}

// CHECK: operand 'step' at position 1 does not verify: i32 should be of base attribute index

// -----

// A stage's policy must fit its grid: RowSync of 48 posts on a 32-column grid never fills.
gpu.module @k {
  gpu.func @f(%a: memref<?xf32>) kernel {
    gpu.return
  }
}
sync.stage @g1 {kernel = @k::@f, grid = array<i64: 4, 32>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}

// CHECK: sync.stage @g1: policy RowSync on grid (4, 32): semaphore 0 receives 32 posts per launch but the policy expects 48

// -----

gpu.module @k {
  gpu.func @f(%a: memref<?xf32>) kernel {
    gpu.return
  }
}
sync.stage @g1 {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}

// CHECK: sync.stage: policy RowSync takes 2 tile coordinates but the grid (4,) has 1

// -----

gpu.module @k {
  gpu.func @f(%a: !tile.tensor_map<128x64xf16, swizzle 128>) kernel {
    %t = sync.tile : index
    sync.load_point operand 0 [%t] single_thread
    gpu.return
  }
}

// CHECK: sync.load_point: operand 0 is a tensor map: its loads are bulk tensor copies, mark the hook async_proxy

// -----

gpu.module @k {
  gpu.func @f(%a: memref<?xf32>) kernel {
    %t = sync.tile : index
    sync.store_point [%t] threads 100
    gpu.return
  }
}

// CHECK: sync.store_point: threads must be whole warps (a multiple of 32 up to 1024), got 100
