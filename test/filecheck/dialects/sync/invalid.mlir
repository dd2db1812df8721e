// RUN: tilesync-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// A 3×3 halo read without padding: consumer row 0 reads producer row -1.
sync.stage @conv1 {kernel = @k::@conv, grid = array<i64: 8, 4>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 32>}
sync.stage @conv2 {kernel = @k::@conv, grid = array<i64: 8, 4>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128, 32>}
sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s0 - 1, s1) forall s0 in [0, 3), s1 in [0, 4)

// CHECK: sync.dependency: consumer tile (0, 0) of @conv2 with s0 = 0, s1 = 0 reads producer tile (-1, 0) outside the grid (8, 4) of @conv1

// -----

// Off by one at the top: the forall runs one column past the producer grid.
sync.stage @gemm1 {kernel = @k::@gemm, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 256, 128, 32>}
sync.stage @gemm2 {kernel = @k::@gemm, grid = array<i64: 4, 96>, block = array<i64: 128, 1, 1>, tile = array<i64: 256, 128, 32>}
sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 49)

// CHECK: sync.dependency: consumer tile (3, 95) of @gemm2 with s0 = 48 reads producer tile (3, 48) outside the grid (4, 48) of @gemm1

// -----

// Not linear (mod): found by enumerating the box.
sync.stage @qkv {kernel = @k::@gemm, grid = array<i64: 4, 9>, block = array<i64: 128, 1, 1>, tile = array<i64: 256, 128, 32>}
sync.stage @attn {kernel = @k::@attn, grid = array<i64: 4, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 256, 128, 32>}
sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 mod 3 + s0 * 4) forall s0 in [0, 3)

// CHECK: sync.dependency: consumer tile (0, 1) of @attn with s0 = 2 reads producer tile (0, 9) outside the grid (4, 9) of @qkv

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @a -> @b operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 4)

// CHECK: sync.dependency: map takes 1 consumer tile coordinates but consumer @b has a 2-D grid (4, 4)

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @a -> @missing operand 0 tiles (d0, d1) -> (d0, d1)

// CHECK: sync.dependency: consumer @missing must name a sync.stage, found nothing

// -----

sync.launch @nowhere

// CHECK: sync.launch: stage @nowhere must name a sync.stage, found nothing

// -----

"test.op"() {sym_name = "not_a_stage"} : () -> ()
sync.wait_kernel @not_a_stage {stream = 1 : i64}

// CHECK: sync.wait_kernel: producer @not_a_stage must name a sync.stage, found nothing

// -----

sync.stage @bad {kernel = @k::@f, grid = array<i64: 4, 0>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}

// CHECK: sync.stage: grid extents must be positive, got (4, 0)

// -----

sync.stage @bad {kernel = @k::@f, grid = array<i64: 2, 2, 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}

// CHECK: sync.stage: grid must have 1 to 3 dimensions, got (2, 2, 2, 2)

// -----

sync.stage @bad {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 64, 32, 1>, tile = array<i64: 64, 64>}

// CHECK: sync.stage: block (64, 32, 1) has 2048 threads, more than 1024

// -----

sync.stage @bad {kernel = @f, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}

// CHECK: sync.stage: kernel must be @gpu_module::@function, got @f

// -----

"gpu.module"() <{sym_name = "k"}> ({
  "gpu.func"() <{function_type = () -> (), kernel}> ({
    "gpu.return"() : () -> ()
  }) {sym_name = "present"} : () -> ()
}) : () -> ()
sync.stage @bad {kernel = @k::@absent, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}

// CHECK: sync.stage: kernel @k::@absent is not defined

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @a -> @b operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [2, 2)

// CHECK: sync.dependency: forall s0 in [2, 2) is empty

// -----

"test.op"() {p = #sync.policy<TileSync (d0, d1) -> (d0), posts = 4>} : () -> ()

// CHECK: policy named TileSync but its map (d0, d1) -> (d0) is RowSync

// -----

"test.op"() {p = #sync.policy<RowSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 4>} : () -> ()

// CHECK: policy named RowSync but its map (d0, d1) -> (d0 * 3 + d1 mod 3) is StridedSync

// -----

"test.op"() {p = #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 2>} : () -> ()

// CHECK: TileSync needs posts = 1, got 2

// -----

"test.op"() {p = #sync.policy<Bogus (d0, d1) -> (d0), posts = 4>} : () -> ()

// CHECK: unknown policy name 'Bogus', expected one of TileSync, RowSync, StridedSync, Conv2DTileSync, Custom

// -----

// A map that is none of the named shapes must be called Custom.
"test.op"() {p = #sync.policy<StridedSync (d0, d1) -> (d0 floordiv 2 + d1), posts = 1>} : () -> ()

// CHECK: policy named StridedSync but its map (d0, d1) -> (d0 floordiv 2 + d1) is Custom

// -----

"test.op"() {p = #sync.policy<Custom (d0, d1) -> (d0, d1), posts = 1>} : () -> ()

// CHECK: policy map must have exactly one result (the semaphore index), got (d0, d1) -> (d0, d1)

// -----

"test.op"() {p = #sync.policy<RowSync (d0, d1) -> (d0), posts = 0>} : () -> ()

// CHECK: policy posts must be positive, got 0

// -----

"test.op"() {o = #sync.order<strided>} : () -> ()

// CHECK: tile order strided takes 1 parameters, got 0

// -----

"test.op"() {o = #sync.order<diagonal>} : () -> ()

// CHECK: unknown tile order 'diagonal', expected one of row_major, column_major, strided, table

// -----

// A stage's table order is a permutation of its grid: a tile listed twice would post twice, one
// left out would never be computed (its consumers would wait forever).
sync.stage @short {kernel = @kernels::@gemm, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, order = #sync.order<table<0, 1, 2>>}

// CHECK: sync.stage @short: tile order table has 3 entries but grid (2, 2) has 4 tiles

// -----

sync.stage @twice {kernel = @kernels::@gemm, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, order = #sync.order<table<0, 1, 2, 3, 4, 4>>}

// CHECK: sync.stage @twice: tile order table lists tile 4 twice: not a permutation of grid (2, 3)

// -----

sync.stage @outside {kernel = @kernels::@gemm, grid = array<i64: 4>, block = array<i64: 128>, tile = array<i64: 64>, order = #sync.order<table<0, 1, 2, 4>>}

// CHECK: sync.stage @outside: tile order table entry 3 is 4, outside the 4 tiles of grid (4,)

// -----

%sems, %epoch, %x = "test.op"() : () -> (memref<?xi32>, i32, index)
sync.wait %sems[%x] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8> : memref<?xi32>

// CHECK: sync.wait: policy RowSync takes 2 tile coordinates, got 1

// -----

%sems, %epoch, %x = "test.op"() : () -> (memref<?xi32>, i32, index)
sync.wait %sems[%x, %x] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8> timeout_ns 0 : memref<?xi32>

// CHECK: sync.wait: timeout_ns must be positive, got 0

// -----

%sems, %epoch, %x = "test.op"() : () -> (memref<?xi32>, i32, index)
%r = sync.probe %sems[%x, %x] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: 0, 4>] : memref<?xi32>

// CHECK: sync.probe: map 0 has 1 symbols, so its range needs 3 values (lo, hi, step each), got 2

// -----

%sems, %epoch, %x = "test.op"() : () -> (memref<?xi32>, i32, index)
%r = sync.probe %sems[%x, %x] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: 4, 4, 1>] : memref<?xi32>

// CHECK: sync.probe: map 0: range [4, 4) step 1 is empty or its step is not positive

// -----

%sems, %epoch, %x = "test.op"() : () -> (memref<?xi32>, i32, index)
%r = sync.probe %sems[%x, %x] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (s0)>] over [array<i64: 0, 4, 1>] : memref<?xi32>

// CHECK: sync.probe: map 0 takes 2 tile coordinates and gives 1; the tile has 2 and the policy takes 2

// -----

%sems, %epoch, %x = "test.op"() : () -> (memref<?xi32>, i32, index)
%r = sync.probe %sems[%x, %x] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [] over [] : memref<?xi32>

// CHECK: sync.probe: reads no producer tile

// -----

// More semaphores than a probe may name (sync-verify would enumerate them per tile).
%sems, %epoch, %x = "test.op"() : () -> (memref<?xi32>, i32, index)
%r = sync.probe %sems[%x, %x] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [affine_map<(d0, d1)[s0, s1] -> (s0, s1)>] over [array<i64: 0, 4294967297, 1, 0, 4, 1>] until_ready : memref<?xi32>

// CHECK: sync.probe: 17179869188 points, more than 65536 (a probe's block tests them a round of its threads at a time)

// -----

%sems, %epoch, %x = "test.op"() : () -> (memref<?xi32>, i32, index)
%r = sync.probe %sems[%x, %x] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: 0, 4, 1>] clipped_to array<i64: 4> : memref<?xi32>

// CHECK: sync.probe: clipped_to (4,) is not a grid of the policy's 2 dimensions

// -----

%sems, %epoch, %x = "test.op"() : () -> (memref<?xi64>, i32, index)
sync.post %sems[%x, %x] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8> : memref<?xi64>

// CHECK: sync.post: semaphores must be a rank-1 memref of i32, got memref<?xi64>

// -----

// Bad input the fuzzer found (tools/fuzz.py): each a located diagnostic, never a traceback.

"test.op"() {p = #sync.policy<Custom (d0, d1) -> (d0 floordiv 0), posts = 1>} : () -> ()

// CHECK: policy map (d0, d1) -> (d0 floordiv 0): d0 floordiv 0 needs a positive constant divisor

// -----

"test.op"() {p = #sync.policy<Custom (d0, d1) -> (d0 mod -2 + d1), posts = 1>} : () -> ()

// CHECK: policy map (d0, d1) -> (d0 mod -2 + d1): d0 mod -2 needs a positive constant divisor

// -----

"test.op"() {p = #sync.policy<RowSync (d0, d1) -> (d0 * d1), posts = 1>} : () -> ()

// CHECK: semi-affine expression: a product needs a constant factor, and floordiv, ceildiv and mod a constant divisor

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @a -> @b operand 0 tiles (d0, d1)[s0] -> (d0 ceildiv 0, s0) forall s0 in [0, 48)

// CHECK: sync.dependency: map (d0, d1)[s0] -> (d0 ceildiv 0, s0): d0 ceildiv 0 needs a positive constant divisor

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @a -> @b operand 0 tiles (d0, d1)[s0] -> (d0, d1) forall s0 in [0, 4611686018427387904)

// CHECK: sync.dependency: each consumer tile reads 4611686018427387904 points of the forall box, more than 1000000

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 4, 48>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @a -> @b operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 18446744073709551616)

// CHECK: forall bound 18446744073709551616 does not fit in i64

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 65536>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}

// CHECK: sync.stage: grid dimension y must be in [1, 65535], got 65536

// -----

sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 4>, block = array<i64: 8, 1, 128>, tile = array<i64: 64, 64>}

// CHECK: sync.stage: block dimension z must be in [1, 64], got 128

// -----

// A grouped policy is checked on a grid of any size; another shape is enumerated, up to a limit.
sync.stage @big {kernel = @k::@f, grid = array<i64: 2147483647, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @wrong {kernel = @k::@f, grid = array<i64: 2147483647, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 2>}

// CHECK: sync.stage @wrong: policy RowSync on grid (2147483647, 4): semaphore 0 receives 4 posts per launch but the policy expects 2

// -----

sync.stage @big {kernel = @k::@f, grid = array<i64: 4096, 4096>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<Custom (d0, d1) -> (d0 + d1 + 1), posts = 1>}

// CHECK: sync.stage @big: policy Custom (d0, d1) -> (d0 + d1 + 1) on grid (4096, 4096): cannot check a map of this shape on 16777216 tiles (at most 1000000 are enumerated; the grouped shapes TileSync, RowSync, StridedSync, Conv2DTileSync are checked on any grid)

// -----

"test.op"() {p = #sync.policy<RowSync (d0, d1) -> (d0), posts = 9223372036854775807>} : () -> ()

// CHECK: policy posts must fit in i32, got 9223372036854775807

// -----

// A stage launched twice in one program: its second launch would post again into the epoch
// the waits on it compare against.
sync.stage @p {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 1>}
sync.launch @p
sync.launch @p {stream = 1 : i64}

// CHECK: sync.launch: @p is launched twice; a program launches each stage once a run

// -----

// A fused launch joins the launch right before it on its stream: there must be one.
sync.stage @p {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 1>}
sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 1>}
sync.launch @p {stream = 1 : i64}
sync.launch @c {fused = true}

// CHECK: sync.launch: fused, but no launch precedes it on stream 0 to join

// -----

sync.stage @p {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 1>}
sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 1>}
sync.launch @p
sync.wait_kernel @p
sync.launch @c {fused = true}

// CHECK: sync.launch: fused, but a sync.wait_kernel precedes it on stream 0: a fused launch joins the launch right before it

// -----

sync.stage @p {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 1>}
sync.stage @c {kernel = @k::@f, grid = array<i64: 4>, block = array<i64: 32, 1, 1>, tile = array<i64: 1>}
sync.launch @p
sync.launch @c {fused = true, pdl = true}

// CHECK: sync.launch: a fused launch joins the launch before it and has no pdl of its own

// -----

// An output_map is a permutation of the grid's dimensions, each plus a constant.
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2>, block = array<i64: 64>, tile = array<i64: 4, 4>, output_map = affine_map<(d0, d1) -> (d0, d0)>}

// CHECK: sync.stage @p: output_map (d0, d1) -> (d0, d0) must use each of the grid's 2 dimensions once (a permutation, each plus a constant)

// -----

sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2>, block = array<i64: 64>, tile = array<i64: 4, 4>, output_map = affine_map<(d0, d1) -> (d0 * 2, d1)>}

// CHECK: sync.stage @p: output_map result (d0 * 2) is not one dimension plus a constant

// -----

sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2>, block = array<i64: 64>, tile = array<i64: 4, 4>, output_map = affine_map<(d0, d1, d2) -> (d2, d0, d1)>}

// CHECK: sync.stage @p: output_map (d0, d1, d2) -> (d2, d0, d1) must take the grid's 2 dimensions and no symbols

// -----

sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2>, block = array<i64: 64>, tile = array<i64: 4, 4>, output_map = affine_map<(d0, d1) -> (d0, d1 - 4)>}

// CHECK: sync.stage @p: output_map (d0, d1) -> (d0, (d1 + -4)) has a negative offset
