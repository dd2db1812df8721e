// RUN: not tilesync explain %s 2>&1 | filecheck %s
// RUN: sed -e 's/blocks_per_sm = 0/blocks_per_sm = 1/' %s | not tilesync explain - --arch sm_75 2>&1 | filecheck %s --check-prefix=ARCH
// RUN: sed -e 's/blocks_per_sm = 0/blocks_per_sm = 1/' %s | not python -m tilesync.tools.explain - --arch sm_75 2>&1 | filecheck %s --check-prefix=ARCH
// A recorded occupancy of 0 blocks per SM is refused at its stage (the wave model failed
// with an internal ValueError), and an --arch that is no target is refused as compile's -t is
// (it was taken up to the first stage, then blamed on it as sync-annotate-occupancy's).
builtin.module {
  gpu.module @kernels {
    gpu.func @k(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
  }
  sync.stage @a {kernel = @kernels::@k, grid = array<i64: 264>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>, blocks_per_sm = 0 : i64}
}
// CHECK: explain_invalid.mlir:13:3: error: explain: stage @a has blocks_per_sm = 0: it cannot run (a stage runs at least 1 block per SM)
// ARCH: error: unknown target 'sm_75'; choose one of sm_80, sm_90, sm_90a
