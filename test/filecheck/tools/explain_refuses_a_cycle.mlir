// RUN: not tilesync explain %s 2>&1 | filecheck %s
// RUN: not tilesync compile %s -o /dev/null 2>&1 | filecheck %s
// Two stages that each wait for the other's tiles can never make progress: explain refuses the
// program with sync-verify's message (it had printed a predicted speedup and exited 0), and so
// does compile, whatever the kernels' hooks (it compiled this one, whose kernels have none).
builtin.module {
  gpu.module @k {
    gpu.func @a(%x: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>} {
      gpu.return
    }
    gpu.func @b(%x: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @a {kernel = @k::@a, grid = array<i64: 4, 1>, block = array<i64: 32, 1, 1>, tile = array<i64: 32, 1, 1>}
  sync.stage @b {kernel = @k::@b, grid = array<i64: 4, 1>, block = array<i64: 32, 1, 1>, tile = array<i64: 32, 1, 1>}
  sync.dependency @a -> @b operand 0 tiles (d0, d1) -> (d0, d1)
  sync.dependency @b -> @a operand 0 tiles (d0, d1) -> (d0, d1)
  sync.launch @a {stream = 0 : i64}
  sync.launch @b {stream = 1 : i64}
}

// CHECK: explain_refuses_a_cycle.mlir:{{[0-9]+}}:3: error: {{.*}}the dependencies form a cycle @a -> @b -> @a
// CHECK-NOT: Traceback
