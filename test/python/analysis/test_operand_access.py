"""The pixels an im2col TMA copy reads (operand_access.im2col_box), as a box of its tensor,
and sync-verify relying on them: a conv chain of TMA convs whose dependency leaves out the
halo is refused."""

from pathlib import Path

import pytest
from xdsl.dialects.builtin import IndexType, MemRefType, f16, i64
from xdsl.ir import Block
from xdsl.ir.affine import AffineExpr, AffineMap

from tilesync.analysis.operand_access import im2col_box
from tilesync.api import parse, run_passes
from tilesync.contract import TilesyncError
from tilesync.dialects import sync
from tilesync.dialects import tile as tl


class ExactRun:
    """A batch run of one tile whose values are all known exactly."""

    def __init__(self, values):
        self.values = values

    def value(self, v):
        found = self.values[v]
        return found, found


def box(pixels: int, coords: list[int], taps: list[int]):
    """im2col_box of a copy of `pixels` pixels x 64 channels from a 2 x 16 x 16 x 128 tensor
    at window coordinates (n, h, w, c) and filter offsets (r, s)."""
    index = IndexType()
    block = Block(arg_types=[tl.TensorMapType((pixels, 64), f16, 128, im2col=(2, 16, 16, 128)),
                             MemRefType(f16, [pixels, 64], memory_space=3),
                             MemRefType(i64, [1], memory_space=3), *[index] * 7])
    tmap, smem, bars, *values = block.args
    zero = values[6]
    op = tl.TmaLoadOp(tmap, values[:4], smem, [zero, zero], bars, [zero], im2col=values[4:6])
    run = ExactRun(dict(zip(values, [*coords, *taps, 0], strict=True)))
    lo, hi = im2col_box(run, op)
    return [int(v) for v in lo], [int(v) for v in hi]


def test_one_row_of_pixels_reads_a_stretch_of_one_input_row():
    # output pixels 4 .. 11 of image 0's row 0 (window h = -1, w = 3), tap (1, 2): input row
    # 0, columns 5 .. 12
    assert box(8, [0, -1, 3, 64], [1, 2]) == ([0, 0, 5, 64], [0, 0, 12, 127])


def test_rows_of_one_image_read_whole_input_rows_the_padding_left_out():
    # output pixels 0 .. 63 (rows 0 .. 3), tap (0, 0): input rows -1 .. 2 and columns -1 .. 14
    assert box(64, [0, -1, -1, 0], [0, 0]) == ([0, 0, 0, 0], [0, 2, 14, 63])


def test_pixels_of_two_images_read_both_whole():
    # output pixels 224 .. 287: image 0's rows 14, 15 and image 1's rows 0, 1
    assert box(64, [0, 13, -1, 0], [1, 1]) == ([0, 0, 0, 0], [1, 15, 15, 63])


def test_pixels_past_the_last_image_read_nothing():
    lo, hi = box(64, [2, -1, -1, 0], [1, 1])
    assert hi[0] < lo[0]


def test_a_walk_from_outside_the_pixels_widens_to_the_whole_tensor():
    # window w = 20 is no pixel's (positions 0 .. 15): where the copy engine would start is
    # not bounded here, so every pixel may be read
    whole = ([0, 0, 0, 0], [1, 15, 15, 127])
    assert box(8, [0, -1, 20, 64], [1, 2]) == whole
    assert box(8, [-1, -1, 0, 64], [1, 2]) == whole


CHAIN = Path(__file__).parents[2] / "filecheck" / "transforms" / "graph" / \
    "graph_to_stages_conv_chain_tma.mlir"


def test_a_tma_conv_chain_without_its_halo_is_refused():
    """conv2's copies at taps r = 0 and 2 read the image rows above and below its tile, which
    the neighbouring tiles of conv1 write: a dependency on the tile's own row alone waits for
    too little."""
    text = CHAIN.read_text().split("// -----")[0]
    module = parse(text)
    run_passes(module, ["graph-to-stages{conv-pipeline=tma_ws}"])
    (dep,) = [op for op in module.ops if isinstance(op, sync.DependencyOp)]
    d0, s0 = AffineExpr.dimension(0), AffineExpr.symbol(0)
    own_row = sync.DependencyOp("conv1", "conv2", 0, AffineMap(2, 1, (d0, s0 % 2)), [(0, 18)])
    module.body.block.insert_op_before(own_row, dep)
    module.body.block.erase_op(dep)
    with pytest.raises(TilesyncError, match=r"consumer tile \(0, 0\) of @conv2: 'tile.tma_load' "
                                            r"reads operand 0 .* producer tile \(1, 0\) of "
                                            r"@conv1"):
        run_passes(module, ["sync-generate-policies", "sync-insert-post-wait", "sync-use-pdl",
                            "sync-verify"])
