// RUN: tilesync-opt %s -p dataflow-form-pipeline --split-input-file | filecheck %s

// Every stage left out of the pipeline is listed with the reason: here @g1, whose tiles the
// member @r (a reduction over batch and K, split) reads in an order no queue hands out.
builtin.module {
  gpu.module @k {
    gpu.func @g1() kernel { gpu.return }
    gpu.func @r() kernel { gpu.return }
    gpu.func @add() kernel { gpu.return }
    gpu.func @c() kernel { gpu.return }
  }
  sync.stage @g1 {kernel = @k::@g1, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "gemm"}
  sync.stage @r {kernel = @k::@r, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "reduction", dataflow.split = 2 : i64, dataflow.final_kernel = @k::@add}
  sync.stage @c1 {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "elementwise"}
  sync.stage @c2 {kernel = @k::@c, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>, dataflow.kind = "elementwise"}
  sync.dependency @g1 -> @r operand 0 tiles (d0)[s0, s1] -> (s0, s1) forall s0 in [0, 4), s1 in [0, 8)
  sync.dependency @r -> @c1 operand 0 tiles (d0) -> (d0)
  sync.dependency @r -> @c2 operand 0 tiles (d0) -> (d0)
}

// CHECK: dataflow.pipeline @spatial attributes {dataflow.excluded = ["@g1: no queue serves @r's reads of it (tile (0, 0) of @r_fanin reads the @g1 tiles of tickets [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27], but takes tickets 0..15: tickets name tiles in row-major order, so a tile's entries must be the next 16 of @g1's tiles)"]}

// -----

// @d reads @b, a member, but a group holding @a and @d leaves and re-enters it through the
// gather @g.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} { gpu.return }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @g {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gather"}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "elementwise"}
  sync.stage @d {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @g2 {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gather"}
  sync.dependency @a -> @g operand 0 tiles (d0) -> (d0)
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)
  sync.dependency @g -> @d operand 0 tiles (d0) -> (d0)
  sync.dependency @b -> @d operand 1 tiles (d0) -> (d0)
  sync.dependency @g2 -> @d operand 2 tiles (d0) -> (d0)
}

// CHECK: dataflow.pipeline @spatial attributes {dataflow.excluded = ["@g: gathers across all its input", "@g2: gathers across all its input", "@d: the pipeline would not be contiguous: a path between it and the pipeline's stages runs outside, through @g"]}

// -----

// @sum is declared elementwise, but its one tile reads all 64 tiles of @a: a gather across all
// of its input by what it reads (Kitsune §5.1's second rule), which would start once @a has
// ended and hold all of @a in its queue. Left out like a declared gather; @a and @c pipeline.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} { gpu.return }
  }
  sync.stage @a {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @sum {kernel = @k::@f, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "elementwise"}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 64>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "elementwise"}
  sync.dependency @a -> @sum operand 0 tiles (d0)[s0] -> (s0) forall s0 in [0, 64)
  sync.dependency @a -> @c operand 0 tiles (d0) -> (d0)
}

// CHECK: dataflow.pipeline @spatial attributes {dataflow.excluded = ["@sum: gathers across all its input (its tile reads all 64 tiles of @a)"]}
// CHECK-NEXT: dataflow.stage @a
// CHECK-NEXT: dataflow.stage @c
// CHECK-NEXT: }

// -----

// Reductions that dataflow-split-reductions cannot split are left out with its reason (they
// joined, and then that pass refused the whole program): @r cuts its 6 k-tiles into 4, @s has
// no partials, @t no kernel to add them. @g and @c pipeline.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} { gpu.return }
  }
  sync.stage @g {kernel = @k::@f, grid = array<i64: 1, 6>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "gemm"}
  sync.stage @r {kernel = @k::@f, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "reduction", dataflow.split = 4 : i64, dataflow.final_kernel = @k::@f}
  sync.stage @s {kernel = @k::@f, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "reduction"}
  sync.stage @t {kernel = @k::@f, grid = array<i64: 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "reduction", dataflow.split = 2 : i64}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 1, 6>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128>, dataflow.kind = "elementwise"}
  sync.dependency @g -> @r operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 6)
  sync.dependency @g -> @s operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 6)
  sync.dependency @g -> @t operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 6)
  sync.dependency @g -> @c operand 0 tiles (d0, d1) -> (d0, d1)
}

// CHECK: dataflow.pipeline @spatial attributes {dataflow.excluded = ["@r: reduction @r cannot split into 4 partials: the reduced range [0, 6) does not split into 4 equal chunks", "@s: reduction @s needs 'dataflow.split' (partials per output tile, at least 2)", "@t: reduction @t needs 'dataflow.final_kernel' (the kernel adding the partials)"]}
// CHECK-NEXT: dataflow.stage @g
// CHECK-NEXT: dataflow.stage @c
// CHECK-NEXT: }
