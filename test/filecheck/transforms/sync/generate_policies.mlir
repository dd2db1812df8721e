// RUN: tilesync-opt %s -p sync-generate-policies | filecheck %s

// GPT-3 MLP: a consumer tile reads the whole row of producer tiles (all 48 columns), and no
// other row: the columns share one semaphore, rows keep their own → RowSync, 48 posts.
sync.stage @mlp1 {kernel = @k::@gemm, grid = array<i64: 4, 48>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>}
sync.stage @mlp2 {kernel = @k::@gemm, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>}
sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
// CHECK:      sync.stage @mlp1 {{.*}}, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
// CHECK-NEXT: sync.stage @mlp2 {kernel = @k::@gemm, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>}

// Attention: head h reads Q, K, V column tiles h, h + 3, h + 6: tiles 3 apart share one
// semaphore → StridedSync, 3 posts.
sync.stage @qkv {kernel = @k::@gemm, grid = array<i64: 4, 9>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
sync.stage @attn {kernel = @k::@gemm, grid = array<i64: 4, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 128, 32>}
sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 3) forall s0 in [0, 3)
// CHECK:      sync.stage @qkv {{.*}}, policy = #sync.policy<StridedSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 3>}

// 3x3 conv (halo rows r..r+2 of a padded producer, every channel tile): channels shared,
// rows distinct (a row is read by three consumer rows, not all) → RowSync, 4 posts.
sync.stage @conv1 {kernel = @k::@conv, grid = array<i64: 10, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64, 32>}
sync.stage @conv2 {kernel = @k::@conv, grid = array<i64: 8, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64, 32>}
sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s0, s1) forall s0 in [0, 3), s1 in [0, 4)
// CHECK:      sync.stage @conv1 {{.*}}, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}

// Implicit-GEMM conv reading its reduction from two consecutive channel tiles of the producer:
// runs of 2 columns share → Conv2DTileSync, 2 posts.
sync.stage @c1 {kernel = @k::@conv, grid = array<i64: 8, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64, 32>}
sync.stage @c2 {kernel = @k::@conv, grid = array<i64: 8, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 64, 32>}
sync.dependency @c1 -> @c2 operand 0 tiles (d0, d1)[s0] -> (d0, d1 * 2 + s0) forall s0 in [0, 2)
// CHECK:      sync.stage @c1 {{.*}}, policy = #sync.policy<Conv2DTileSync (d0, d1) -> (d0 * 4 + d1 floordiv 2), posts = 2>}

// Two consumers disagree: @row reads whole rows (RowSync would do), @tile reads tile for tile.
// The finer one wins: TileSync.
sync.stage @p {kernel = @k::@gemm, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @row {kernel = @k::@gemm, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @tile {kernel = @k::@gemm, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @row operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
sync.dependency @p -> @tile operand 1 tiles (d0, d1) -> (d0, d1)
// CHECK:      sync.stage @p {{.*}}, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1>}
// CHECK-NEXT: sync.stage @row {{.*}}tile = array<i64: 64, 64>}
// CHECK-NEXT: sync.stage @tile {{.*}}tile = array<i64: 64, 64>}

// P·V: V's row tiles are all read by every consumer of a column: the rows share (a column
// semaphore, printed Custom: an instance of the same attribute, no special case).
sync.stage @softmax {kernel = @k::@gemm, grid = array<i64: 4, 1>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128>}
sync.stage @v_proj {kernel = @k::@gemm, grid = array<i64: 8, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 64, 128, 32>}
sync.stage @pv {kernel = @k::@gemm, grid = array<i64: 4, 2>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 32>}
sync.dependency @softmax -> @pv operand 0 tiles (d0, d1) -> (d0, 0)
sync.dependency @v_proj -> @pv operand 1 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 8)
// CHECK:      sync.stage @softmax {{.*}}, policy = #sync.policy<TileSync (d0, d1) -> (d0 + d1), posts = 1>}
// CHECK-NEXT: sync.stage @v_proj {{.*}}, policy = #sync.policy<Custom (d0, d1) -> (d1), posts = 8>}
// CHECK-NEXT: sync.stage @pv {{.*}}tile = array<i64: 128, 128, 32>}

// 3-D grids (split-K slices in z): a consumer tile reads both slices of its tile → z shared.
sync.stage @z1 {kernel = @k::@gemm, grid = array<i64: 2, 4, 2>, block = array<i64: 64, 2, 1>, tile = array<i64: 64, 64>}
sync.stage @z2 {kernel = @k::@gemm, grid = array<i64: 2, 4, 2>, block = array<i64: 64, 2, 1>, tile = array<i64: 64, 64>}
sync.dependency @z1 -> @z2 operand 0 tiles (d0, d1, d2)[s0] -> (d0, d1, s0) forall s0 in [0, 2)
// CHECK:      sync.stage @z1 {{.*}}, policy = #sync.policy<Custom (d0, d1, d2) -> (d0 * 4 + d1), posts = 2>}

// Too many points to enumerate (2000 x 600 consumer tiles x 8): the structural rule sees a
// lone forall variable spanning the producer's columns → shared → RowSync.
sync.stage @big1 {kernel = @k::@gemm, grid = array<i64: 2000, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @big2 {kernel = @k::@gemm, grid = array<i64: 2000, 600>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @big1 -> @big2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
// CHECK:      sync.stage @big1 {{.*}}, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>}
// CHECK-NEXT: sync.stage @big2 {{.*}}tile = array<i64: 64, 64>}
