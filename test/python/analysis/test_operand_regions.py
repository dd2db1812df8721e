"""The producer-tile map of an operand whose leading dimensions collapse into the producer's
rows (an implicit-GEMM conv reading the NHW x K output of the conv before it as N x H x W x K)."""

import numpy as np

from tilesync.analysis.operand_regions import OperandLayout

# conv1: 4 x 2 tiles of 32 x 64 over a 128 x 128 output: 2 images of 8 x 8 pixels, 128 channels
NHWC = OperandLayout("conv1", (4, 2), (32, 64), 4, (2, 8, 8, 128))


def tiles(layout: OperandLayout, lo, hi) -> set[tuple[int, ...]]:
    return {tuple(int(c) for c in coords) for coords, valid in layout.tiles(lo, hi)
            if bool(np.all(valid))}


def test_rows_of_one_pixel_row():
    # image 1, row 4 (pixels 96 .. 103 of the rows: tile row 3), channels 64 .. 127
    assert tiles(NHWC, [1, 4, 0, 64], [1, 4, 7, 127]) == {(3, 1)}


def test_a_halo_reaches_the_tile_above():
    # rows 3 .. 5 of image 0 (pixels 24 .. 47) meet tile rows 0 and 1
    assert tiles(NHWC, [0, 3, 0, 0], [0, 5, 7, 63]) == {(0, 0), (1, 0)}


def test_an_empty_box_meets_no_tile():
    # a masked read past the image's last row, clipped: h in [8, 7]
    assert tiles(NHWC, [0, 8, 0, 0], [0, 7, 7, 63]) == set()


def test_contains_checks_every_collapsed_dimension():
    inside = NHWC.contains([0, 0], [0, 0, 0, 0], [0, 3, 7, 63])
    outside = NHWC.contains([0, 0], [0, 3, 0, 0], [0, 4, 7, 63])  # pixels 24 .. 39
    past = NHWC.contains([0, 0], [0, -1, 0, 0], [0, 0, 7, 63])  # a row before the image
    assert bool(inside) and not bool(outside) and not bool(past)
