"""graph-to-stages' conv chain: the halo of its dependency, proved by sync-verify on shapes
whose halo reaches 0, 1 and 2 tile rows, and refused once a row of it is left out; a stage's
bindings checked against its kernel's parameters."""

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir.affine import AffineExpr, AffineMap

from tilesync.api import lower, parse
from tilesync.contract import CompileError
from tilesync.dialects import graph, sync
from tilesync.dialects.locations import OpDiagnostic
from tilesync.transforms.graph.graph_to_stages import _stage_program, check_bindings, conv_halo

SYNC = ["sync-generate-policies", "sync-insert-post-wait", "sync-use-pdl",
        "sync-verify{limit=8}"]


def chain(n: int, h: int, w: int, c: int, k1: int, k2: int) -> str:
    x, a, y = (f"tensor<{n}x{h}x{w}x{ch}xf16>" for ch in (c, k1, k2))
    f1, f2 = f"tensor<{k1}x3x3x{c}xf16>", f"tensor<{k2}x3x3x{k1}xf16>"
    conv = 'stride [1, 1] padding [1, 1] layout "NHWC"'
    return (f"func.func @c(%x: {x}, %w1: {f1}, %w2: {f2}) -> {y} {{\n"
            f"  %h = graph.conv2d %x, %w1 {conv} : ({x}, {f1}) -> {a}\n"
            f"  %r = graph.relu %h : {a}\n"
            f"  %y = graph.conv2d %r, %w2 {conv} : ({a}, {f2}) -> {y}\n"
            f"  func.return %y : {y}\n}}\n")


@pytest.mark.parametrize(("bm", "h", "w", "halo"), [
    (128, 8, 8, 0),  # a tile holds two whole images
    (128, 16, 16, 1),  # eight whole rows: one row above and below
    (64, 16, 12, 1),  # tiles start mid-row: up to 2W - 1 = 23 pixels past the tile
    (64, 56, 56, 2),  # ResNet's first layer: 111 pixels, two tiles of 64
    (128, 28, 28, None),  # 784 pixels: tiles straddle images
])
def test_conv_halo(bm, h, w, halo):
    assert conv_halo(bm, h, w) == halo


def _stages(module):
    return {op.sym_name.data: op for op in module.ops if isinstance(op, sync.StageOp)}


@pytest.mark.parametrize("shape", [(2, 8, 8, 64, 64, 64), (2, 16, 12, 32, 64, 128),
                                   (1, 56, 56, 64, 64, 64)])
def test_sync_verify_proves_the_halo(shape):
    module = parse(chain(*shape))
    lower(module, ["graph-to-stages", *SYNC])
    verdicts = {name: op.attributes["sync.verified"].data
                for name, op in _stages(module).items()}
    assert set(verdicts.values()) <= {"proved", "boundary"}, verdicts
    assert set(verdicts) == {"conv1", "conv2"}


def test_a_halo_row_short_is_refused():
    module = parse(chain(2, 16, 16, 64, 64, 64))
    lower(module, ["graph-to-stages"])
    (dep,) = [op for op in module.ops if isinstance(op, sync.DependencyOp)]
    assert dep.ranges[1] == (0, 3)
    d0, s1 = AffineExpr.dimension(0), AffineExpr.symbol(1)
    short = AffineMap(2, 2, (d0 + s1, dep.tiles_map.results[1]))  # rows d0, d0 + 1
    dep.detach()
    module.body.block.add_op(sync.DependencyOp("conv1", "conv2", 0, short,
                                               [dep.ranges[0], (0, 2)], clipped=True))
    # tile row 1 reads the last image row of tile row 0, which it no longer waits for
    with pytest.raises(CompileError, match=r"consumer tile \(1, 0\) of @conv2: 'tile.cp_async' "
                                           r"reads operand 0 .* producer tile \(0, 0\) of "
                                           r"@conv1 .* does not declare"):
        lower(module, SYNC)


@pytest.mark.parametrize(("stage", "binds", "message"), [
    # conv2's filter (128 x 3 x 3 x 64) bound to x (2 x 8 x 8 x 64)
    ("conv2", [("temp", 0), ("input", 0), ("result", 0)],
     r"@conv2 binds #graph.bind<input 0> \(8192 x f16\) to parameter 1, a memref<128x576xf16>"),
    ("conv1", [("input", 0), ("input", 1)], r"@conv1 binds 2 argument\(s\) to a kernel of 3"),
])
def test_a_binding_the_kernel_cannot_take_is_refused(stage, binds, message):
    module = parse(chain(2, 8, 8, 64, 64, 128))
    (fn,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    program, temps = _stage_program(fn)
    check_bindings(program, fn.function_type, temps)  # as the pass builds them
    _stages(program)[stage].attributes[graph.BIND_ATTR] = ArrayAttr(
        [graph.BindAttr(kind, index) for kind, index in binds])
    with pytest.raises(OpDiagnostic, match=message):
        check_bindings(program, fn.function_type, temps)


def test_the_tma_mlp_takes_the_benchs_gemms_with_their_deeper_staging():
    """GPT-3's MLP as the bench runs it (12288 -> 6144 -> 12288, tanh GeLU) on 512 rows:
    graph-to-stages plans the GEMMs of the MLP bench's TMA programs, the staging buffer of
    one box and a fifth stage included (kernels/mlp.py DEEPER_STAGING)."""
    from tilesync.kernels.mlp import mlp_spec
    from tilesync.transforms.graph.graph_to_stages import plan_configs

    x, w1, h = "tensor<512x12288xf16>", "tensor<6144x12288xf16>", "tensor<512x6144xf16>"
    w2 = "tensor<12288x6144xf16>"
    fn = parse(f"func.func @mlp(%x: {x}, %w1: {w1}, %w2: {w2}) -> {x} {{\n"
               f"  %h = graph.linear %x, %w1 : ({x}, {w1}) -> {h}\n"
               f'  %a = graph.gelu %h approximate "tanh" : {h}\n'
               f"  %y = graph.linear %a, %w2 : ({h}, {w2}) -> {x}\n"
               f"  func.return %y : {x}\n}}\n").body.block.first_op
    assert isinstance(fn, func.FuncOp)
    planned, bench = plan_configs(fn), mlp_spec("gpt3", 512, mma="tma")
    for ours, theirs in ((planned.cfg1, bench.cfg1), (planned.cfg2, bench.cfg2)):
        assert (ours.tile, ours.stages, ours.staging_boxes) == \
            (theirs.tile, theirs.stages, theirs.staging_boxes) == ((128, 192, 64), 5, 1)


def test_a_producer_writing_its_output_in_another_shape_has_its_stores_checked():
    """After a KV cache, unsplit (66 sequences x 2 heads fill the SMs), the attention writes O
    as B x T x C and the output GEMM reads it as B·T x C: sync-verify checks the attention's
    stores against its tile over its own shape. Its tile is a sequence's one row; the block's
    64 query rows, which an earlier version declared, are refused at the second sequence."""
    from xdsl.dialects.builtin import DenseArrayBase, i64

    from tilesync.bench.attention import stage_module

    shape = (1, 256, 2, 512, 66, False, 512)
    module = stage_module(shape, "fused:row+pdl")
    assert set(_stages(module)) == {"qkv", "attention", "out"}  # no split, no combine
    attention = _stages(module)["attention"]
    assert attention.tile_shape == (1, 128) and attention.grid_shape == (66, 2)
    lower(module, SYNC)  # limit=8: the boundary tiles, (1, 0) among them
    assert _stages(module)["attention"].attributes["sync.verified"].data == "boundary"
    module = stage_module(shape, "fused:row+pdl")
    _stages(module)["attention"].tile = DenseArrayBase.from_list(i64, [64, 128])
    with pytest.raises(CompileError, match=r"producer tile \(1, 0\) of @attention: "
                                           r"'tile.store_acc' writes argument 3 .* outside"):
        lower(module, SYNC)
