"""The sync dialect's Python API: policy classification and evaluation, named policy
constructors, dependency enumeration and bounds proofs, kernel-level op builders."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import test
from xdsl.dialects.builtin import Builtin, MemRefType, ModuleOp, i32, i64
from xdsl.ir import Block
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from tilesync.dialects.sync import (
    DependencyOp,
    LaunchOp,
    OrderAttr,
    PolicyAttr,
    PostOp,
    StageOp,
    Sync,
    TileOp,
    WaitKernelOp,
    WaitOp,
    classify_policy_map,
    conv2d_tile_sync,
    map_evaluator,
    row_sync,
    strided_sync,
    tile_sync,
)

d0, d1, d2 = (AffineExpr.dimension(i) for i in range(3))
s0, s1 = AffineExpr.symbol(0), AffineExpr.symbol(1)


def amap(num_dims: int, *results: AffineExpr, num_symbols: int = 0) -> AffineMap:
    return AffineMap(num_dims, num_symbols, results)


def parse_attr(text: str):
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Sync)
    return Parser(ctx, text).parse_attribute()


# --- policies ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sem_map", "kind"),
    [
        (amap(2, d0 * 8 + d1), "TileSync"),
        (amap(2, d1 * 4 + d0), "TileSync"),  # column-major linearization
        (amap(1, d0), "TileSync"),
        (amap(3, d0 * 12 + d1 * 4 + d2), "TileSync"),
        (amap(2, d0), "RowSync"),
        (amap(3, d0 * 2 + d2), "RowSync"),
        (amap(2, d0 * 3 + d1 % 3), "StridedSync"),
        (amap(2, d0 * 2 + d1 // 9), "Conv2DTileSync"),
        (amap(2, d1), "Custom"),  # drops the row, not the column
        (amap(2, d0 * 8 + d1 + 1), "Custom"),  # offset: not onto 0..n-1
        (amap(2, d0 * 8 + d0), "Custom"),  # d1 missing and d0 twice
        (amap(2, d0 % 2 + d1), "Custom"),  # mod on the row
        (amap(2, d0 * -1 + d1), "Custom"),  # negative coefficient
        (amap(2, d0, d1), "Custom"),  # two results
    ],
)
def test_classification_by_shape(sem_map: AffineMap, kind: str):
    assert classify_policy_map(sem_map) == kind


def test_policy_prints_its_kind_and_parses_back():
    policy = row_sync((4, 48))
    text = str(policy)
    assert text == "#sync.policy<RowSync (d0, d1) -> (d0), posts = 48>"
    assert parse_attr(text) == policy


def test_policy_name_must_match_the_map():
    with pytest.raises(VerifyException, match=r"named TileSync but its map .* is RowSync"):
        PolicyAttr(amap(2, d0), 4, kind="TileSync")
    with pytest.raises(VerifyException, match="is StridedSync"):
        parse_attr("#sync.policy<RowSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 4>")


def test_semaphore_index_evaluates_the_map():
    policy = tile_sync((4, 8))
    assert policy.num_dims == 2
    assert policy.semaphore_index((0, 0)) == 0
    assert policy.semaphore_index((2, 5)) == 21
    assert policy.semaphore_index((3, 7)) == 31
    with pytest.raises(ValueError, match="2 tile coordinates"):
        policy.semaphore_index((1,))


def test_named_constructors():
    tile = tile_sync((4, 8))
    assert (tile.kind, tile.posts.data, tile.num_semaphores((4, 8))) == ("TileSync", 1, 32)
    assert tile.sem_map.data == amap(2, d0 * 8 + d1)

    row = row_sync((4, 8))
    assert (row.kind, row.posts.data, row.num_semaphores((4, 8))) == ("RowSync", 8, 4)
    assert {row.semaphore_index((2, c)) for c in range(8)} == {2}

    row3 = row_sync((2, 4, 3))
    assert (row3.kind, row3.posts.data, row3.num_semaphores((2, 4, 3))) == ("RowSync", 4, 6)

    strided = strided_sync((4, 9), 3)
    assert (strided.kind, strided.posts.data, strided.num_semaphores((4, 9))) == (
        "StridedSync",
        3,
        12,
    )
    # Columns 1, 4, 7 of a row (Q, K, V of head 1) share one semaphore; column 2 does not.
    assert strided.semaphore_index((1, 1)) == strided.semaphore_index((1, 4))
    assert strided.semaphore_index((1, 1)) == strided.semaphore_index((1, 7))
    assert strided.semaphore_index((1, 1)) != strided.semaphore_index((1, 2))

    conv = conv2d_tile_sync((4, 18), 9)
    assert (conv.kind, conv.posts.data, conv.num_semaphores((4, 18))) == ("Conv2DTileSync", 9, 8)
    assert conv.semaphore_index((1, 8)) == 2 and conv.semaphore_index((1, 9)) == 3

    for policy, grid in [
        (tile, (4, 8)),
        (row, (4, 8)),
        (row3, (2, 4, 3)),
        (strided, (4, 9)),
        (conv, (4, 18)),
    ]:
        policy.verify_on_grid(grid)  # exactly `posts` posts reach every semaphore

    with pytest.raises(ValueError):
        strided_sync((4, 8), 3)  # 8 columns do not split into strides of 3
    with pytest.raises(ValueError):
        row_sync((8,))


def test_verify_on_grid_catches_wrong_posts_and_non_bijection():
    with pytest.raises(VerifyException, match=r"semaphore 0 receives 8 posts .* expects 4"):
        PolicyAttr(amap(2, d0), 4).verify_on_grid((4, 8))
    # Row-major with a too small row stride: tiles (0, 4) and (1, 0) collide.
    with pytest.raises(VerifyException, match="receives 2 posts"):
        PolicyAttr(amap(2, d0 * 4 + d1), 1).verify_on_grid((4, 8))


def test_order_attr():
    assert str(OrderAttr("row_major")) == "#sync.order<row_major>"
    strided = OrderAttr("strided", [3])
    assert str(strided) == "#sync.order<strided<3>>"
    assert strided.values == (3,)
    assert parse_attr("#sync.order<table<4, 5>>") == OrderAttr("table", [4, 5])
    with pytest.raises(VerifyException, match="takes 1 parameters"):
        OrderAttr("strided")
    with pytest.raises(VerifyException, match="unknown tile order"):
        OrderAttr("zigzag")


# --- dependencies ----------------------------------------------------------------------------


def stage(name: str, grid: tuple[int, ...]) -> StageOp:
    return StageOp(name, ["kernels", "gemm"], grid, (128, 1, 1), (128, 128, 32))


def module_with(*ops) -> ModuleOp:
    return ModuleOp(list(ops))


def test_producer_tiles_enumerates_forall():
    row = DependencyOp("mlp1", "mlp2", 0, amap(2, d0, s0, num_symbols=1), [(0, 4)])
    assert row.producer_tiles((2, 7)) == [(2, 0), (2, 1), (2, 2), (2, 3)]

    strided = DependencyOp("qkv", "attn", 0, amap(2, d0, d1 + s0 * 3, num_symbols=1), [(0, 3)])
    assert strided.producer_tiles((1, 2)) == [(1, 2), (1, 5), (1, 8)]

    halo = DependencyOp("c1", "c2", 0, amap(2, d0 + s0, s1, num_symbols=2), [(0, 3), (0, 2)])
    assert halo.producer_tiles((4, 0)) == [(4, 0), (4, 1), (5, 0), (5, 1), (6, 0), (6, 1)]

    # Duplicates collapse: (d0 floordiv 2) reaches one producer tile twice.
    pair = DependencyOp("a", "b", 0, amap(1, d0 // 2 + s0 * 0, num_symbols=1), [(0, 2)])
    assert pair.producer_tiles((5,)) == [(2,)]
    assert row.ranges == [(0, 4)]


def test_dependency_in_grid_verifies():
    dependency = DependencyOp("mlp1", "mlp2", 0, amap(2, d0, s0, num_symbols=1), [(0, 48)])
    module = module_with(stage("mlp1", (4, 48)), stage("mlp2", (4, 96)), dependency)
    module.verify()
    assert dependency.producer_stage().grid_shape == (4, 48)
    assert dependency.consumer_stage().rank == 2


def test_dependency_out_of_grid_names_the_tiles():
    dependency = DependencyOp("c1", "c2", 0, amap(2, d0 + s0 - 1, d1, num_symbols=1), [(0, 3)])
    module = module_with(stage("c1", (8, 4)), stage("c2", (8, 4)), dependency)
    with pytest.raises(
        VerifyException,
        match=r"consumer tile \(0, 0\) of @c2 with s0 = 0 reads producer tile \(-1, 0\) "
        r"outside the grid \(8, 4\) of @c1",
    ):
        module.verify()


def test_dependency_high_corner_found_exactly():
    # Linear maps are decided at the box's corners, even for a box far above 1e6 points.
    dependency = DependencyOp("a", "b", 0, amap(2, d0, d1 * 2 + s0, num_symbols=1), [(0, 3)])
    module = module_with(stage("a", (2000, 4000)), stage("b", (2000, 2000)), dependency)
    with pytest.raises(
        VerifyException, match=r"consumer tile \(1999, 1999\) .* s0 = 2 .* \(1999, 4000\)"
    ):
        module.verify()


def test_dependency_mod_proved_by_intervals_on_a_huge_box():
    dependency = DependencyOp("a", "b", 0, amap(2, d0, d1 % 4), [])
    module = module_with(stage("a", (2000, 4)), stage("b", (2000, 2000)), dependency)
    module.verify()  # 4e6 points: not enumerated, `d1 mod 4` ∈ [0, 3] by intervals


def test_dependency_mod_found_by_enumeration():
    dependency = DependencyOp("a", "b", 0, amap(2, d0, d1 % 3 + s0 * 4, num_symbols=1), [(0, 3)])
    module = module_with(stage("a", (4, 9)), stage("b", (4, 3)), dependency)
    with pytest.raises(VerifyException, match=r"consumer tile \(0, 1\) .* s0 = 2 .* \(0, 9\)"):
        module.verify()


def test_dependency_rank_and_stage_checks():
    wrong_rank = DependencyOp("a", "b", 0, amap(1, d0, s0, num_symbols=1), [(0, 4)])
    with pytest.raises(VerifyException, match="1 consumer tile coordinates"):
        module_with(stage("a", (4, 4)), stage("b", (4, 4)), wrong_rank).verify()
    unknown = DependencyOp("a", "nope", 0, amap(2, d0, d1), [])
    with pytest.raises(VerifyException, match=r"@nope must name a sync.stage"):
        module_with(stage("a", (4, 4)), unknown).verify()


def test_stage_and_launch_ops():
    gemm = stage("gemm", (4, 48))
    assert (gemm.grid_shape, gemm.block_shape, gemm.tile_shape) == (
        (4, 48),
        (128, 1, 1),
        (128, 128, 32),
    )
    assert str(gemm.kernel) == "@kernels::@gemm"
    assert gemm.order is None
    launch = LaunchOp("gemm", stream=1, priority=-2, pdl=True)
    wait_kernel = WaitKernelOp("gemm", stream=1)
    module_with(gemm, wait_kernel, launch).verify()
    assert (launch.stream.value.data, launch.priority.value.data, launch.pdl.value.data != 0) == (
        1,
        -2,
        True,
    )
    with pytest.raises(VerifyException, match="grid extents must be positive"):
        module_with(StageOp("bad", ["k", "f"], (4, 0), (32,), (16,))).verify()
    with pytest.raises(VerifyException, match=r"must name a sync.stage"):
        module_with(LaunchOp("ghost")).verify()


# --- kernel-level ops -------------------------------------------------------------------------


def kernel_block() -> tuple[Block, TileOp]:
    block = Block(arg_types=[MemRefType(i32, [-1]), i32])
    tile = TileOp(OrderAttr("row_major"), rank=2)
    block.add_op(tile)
    return block, tile


def test_wait_and_post_build_and_verify():
    block, tile = kernel_block()
    sems, epoch = block.args
    policy = row_sync((4, 48))
    wait = WaitOp(sems, tile.results, policy, epoch, timeout_ns=1_000_000)
    post = PostOp(sems, tile.results, tile_sync((4, 48)), epoch)
    block.add_ops([wait, post])
    for op in block.ops:
        op.verify()
    assert wait.sems is sems and wait.epoch is epoch
    assert list(wait.tile) == list(tile.results)
    assert wait.policy == policy and wait.timeout_ns is not None
    assert wait.timeout_ns.value.data == 1_000_000
    assert post.timeout_ns is None and post.policy.kind == "TileSync"
    assert [r.type for r in tile.results] == [TileOp(rank=2).results[0].type] * 2
    assert len(TileOp(rank=3).results) == 3


def test_wait_checks_tile_count_and_semaphore_type():
    block, tile = kernel_block()
    sems, epoch = block.args
    with pytest.raises(VerifyException, match="takes 2 tile coordinates, got 1"):
        WaitOp(sems, tile.results[:1], row_sync((4, 8)), epoch).verify()
    with pytest.raises(VerifyException, match="timeout_ns must be positive"):
        WaitOp(sems, tile.results, row_sync((4, 8)), epoch, timeout_ns=0).verify()
    wide = test.TestOp(result_types=[MemRefType(i64, [16])])
    with pytest.raises(VerifyException, match="rank-1 memref of i32"):
        PostOp(wide.results[0], tile.results, row_sync((4, 8)), epoch).verify()
    with pytest.raises(VerifyException, match="1 to 3 coordinates"):
        TileOp(rank=4).verify()


def test_kernel_ops_roundtrip_through_text():
    ctx = Context()
    for dialect in (Builtin, test.Test, Sync):
        ctx.load_dialect(dialect)
    text = """
    %sems, %e = "test.op"() : () -> (memref<?xi32>, i32)
    %x, %y = sync.tile order #sync.order<strided<3>> : index, index
    sync.wait %sems[%x, %y] epoch %e
        policy #sync.policy<StridedSync (d0, d1) -> (d0 * 3 + d1 mod 3), posts = 4>
        timeout_ns 5 : memref<?xi32>
    sync.post %sems[%x, %y] epoch %e
        policy #sync.policy<TileSync (d0, d1) -> (d0 * 12 + d1), posts = 1> : memref<?xi32>
    """
    module = Parser(ctx, text).parse_module()
    module.verify()
    wait = next(op for op in module.walk() if isinstance(op, WaitOp))
    assert wait.policy == strided_sync((4, 12), 3)
    assert wait.timeout_ns is not None and wait.timeout_ns.value.data == 5
    assert str(Parser(ctx, str(module)).parse_module()) == str(module)


# --- kernel hooks and grouped policies -------------------------------------------------------


def test_hook_builders_verify_and_print():
    from xdsl.dialects.builtin import IndexType

    from tilesync.dialects.sync import LoadPointOp, StorePointOp

    block = Block(arg_types=[IndexType(), IndexType(), IndexType()])
    x, y, k = block.args
    load = LoadPointOp(0, [x, y], k)
    store = StorePointOp([x, y])
    block.add_ops([load, store])
    load.verify()
    store.verify()
    assert load.operand.data == 0 and load.step is k and list(load.tile) == [x, y]
    assert LoadPointOp(1, [x]).step is None
    with pytest.raises(VerifyException, match="1 to 3 coordinates"):
        LoadPointOp(0, [x, y, k, x]).verify()


@pytest.mark.parametrize(
    ("grid", "groupings", "expected"),
    [
        ((4, 48), [("distinct", 1), ("shared", 1)], lambda g: row_sync(g)),
        ((4, 8), [("distinct", 1), ("distinct", 1)], lambda g: tile_sync(g)),
        ((4, 9), [("distinct", 1), ("mod", 3)], lambda g: strided_sync(g, 3)),
        ((4, 8), [("distinct", 1), ("floordiv", 2)], lambda g: conv2d_tile_sync(g, 2)),
    ],
)
def test_grouped_policy_is_the_named_instance(grid, groupings, expected):
    from tilesync.dialects.sync import grouped_policy

    assert grouped_policy(grid, groupings) == expected(grid)


def test_grouped_policy_other_shapes_are_custom_instances():
    from tilesync.dialects.sync import grouped_policy

    column = grouped_policy((8, 2), [("shared", 1), ("distinct", 1)])
    assert column.kind == "Custom" and column.posts.data == 8
    column.verify_on_grid((8, 2))
    with pytest.raises(ValueError, match="does not divide"):
        grouped_policy((4, 9), [("distinct", 1), ("mod", 2)])


def _groupings_of(grid):
    """Every grouping of every dimension of `grid` that grouped_policy accepts."""
    from tilesync.analysis.dependency_analysis import _candidates

    choices = [[*_candidates(extent), ("shared", 1)] for extent in grid]
    combos: list[list] = [[]]
    for options in choices:
        combos = [[*c, o] for c in combos for o in dict.fromkeys(options)]
    return combos


@pytest.mark.parametrize("grid", [(6,), (4, 6), (2, 4, 3), (1, 8)])
def test_a_grouped_policy_is_recognized_and_correct_by_construction(grid):
    """What verify_on_grid decides from the shape alone holds by enumeration: each semaphore
    0..n-1 receives exactly `posts` posts."""
    from tilesync.dialects.sync import grouped_policy

    for groupings in _groupings_of(grid):
        policy = grouped_policy(grid, groupings)
        assert policy.grouping_on(grid) is not None, groupings
        counts = policy.posts_per_semaphore(grid)
        assert sorted(counts) == list(range(len(counts)))
        assert set(counts.values()) == {policy.posts.data}
        policy.verify_on_grid(grid)
        with pytest.raises(VerifyException, match=r"semaphore 0 receives|TileSync needs posts"):
            PolicyAttr(policy.sem_map, policy.posts.data + 1).verify_on_grid(grid)


def test_other_shapes_are_not_taken_for_grouped_ones():
    assert PolicyAttr(amap(2, d0 * 4 + d1), 1).grouping_on((4, 8)) is None  # row stride 4
    assert PolicyAttr(amap(2, d0 + d1 + 1), 1).grouping_on((4, 8)) is None  # an offset
    assert PolicyAttr(amap(2, d0 * 2 + d1 % 2), 3).grouping_on((4, 6)) == [
        ("distinct", 1), ("mod", 2)]
    assert PolicyAttr(amap(2, d0 * 2 + d1 % 2), 3).grouping_on((4, 5)) is None  # 2 ∤ 5


def test_huge_grids_verify_at_once_or_say_why():
    import time

    start = time.perf_counter()
    row_sync((2**31 - 1, 65535)).verify_on_grid((2**31 - 1, 65535))
    tile_sync((2**31 - 1, 65535, 65535)).verify_on_grid((2**31 - 1, 65535, 65535))
    assert time.perf_counter() - start < 1
    with pytest.raises(VerifyException, match="cannot check a map of this shape"):
        PolicyAttr(amap(2, d0 + d1 + 1), 1).verify_on_grid((4096, 4096))


@pytest.mark.parametrize("sem_map", [
    amap(2, d0 * 48 + d1), amap(2, d0 + (d1 % 3) * 4 + 7), amap(3, d2 * 9 + d0 // 2 + d1),
    amap(1, d0.ceil_div(4) * -3 + 5), amap(2, (d0 * 2 + d1) // 3 + (d1 % 5)),
])
def test_semaphore_index_is_what_the_map_evaluates_to(sem_map):
    policy = PolicyAttr(sem_map, 1)
    for tile in [(0,) * sem_map.num_dims, (1, 7, 2)[: sem_map.num_dims],
                 (-5, 13, 4)[: sem_map.num_dims], (10**12, 3, 9)[: sem_map.num_dims]]:
        assert policy.semaphore_index(tile) == sem_map.eval(tile, ())[0]


_POSITIONS = st.integers(0, 2)
_LEAVES = st.one_of(_POSITIONS.map(AffineExpr.dimension), st.integers(0, 1).map(AffineExpr.symbol),
                    st.integers(-9, 9).map(AffineExpr.constant))


def _combined(children):
    divisor = st.integers(1, 8)
    return st.one_of(st.tuples(children, children).map(lambda p: p[0] + p[1]),
                     st.tuples(children, st.integers(-4, 4)).map(lambda p: p[0] * p[1]),
                     st.tuples(children, divisor).map(lambda p: p[0] % p[1]),
                     st.tuples(children, divisor).map(lambda p: p[0] // p[1]),
                     st.tuples(children, divisor).map(lambda p: p[0].ceil_div(p[1])))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.recursive(_LEAVES, _combined, max_leaves=6), min_size=1, max_size=3),
       st.lists(st.integers(-20, 20), min_size=5, max_size=5),
       st.lists(st.integers(1, 12), min_size=3, max_size=3))
def test_map_evaluator_computes_what_the_map_means(results, point, grid):
    """The compiled evaluator (dims, then symbols) gives AffineMap.eval's values, floor
    semantics on negative operands included; `within` a grid, None for a result outside it."""
    affine_map = AffineMap(3, 2, tuple(results))
    want = affine_map.eval(point[:3], point[3:])
    assert map_evaluator(affine_map)(point) == want
    inside = all(0 <= v < g for v, g in zip(want, grid, strict=False))
    assert map_evaluator(affine_map, grid[:len(want)])(point) == (want if inside else None)
