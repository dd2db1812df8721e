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


# A placed layout (a producer's output_map): buffer index j is tile-array dimension p_j plus
# offset c_j. Checked against every element of the buffer, one at a time.
PLACED = [OperandLayout("qkv", (2, 3), (4, 2), 2, placement=((1, 5), (0, 0))),
          OperandLayout("batched", (2, 2, 3), (2, 3, 1), 3,
                        placement=((2, 0), (0, 1), (1, 0)))]


def _writer(layout: OperandLayout, element) -> tuple[int, ...] | None:
    """The tile that writes buffer element `element`, brute force, or None (outside)."""
    logical = [0] * len(layout.grid)
    for index, (dim, offset) in zip(element, layout.placement):
        logical[dim] = index - offset
    if any(not 0 <= x < e for x, e in zip(logical, layout.extents)):
        return None
    return tuple(x // t for x, t in zip(logical, layout.tile))


def test_a_placed_layout_maps_each_element_to_the_tile_that_writes_it():
    import itertools

    for layout in PLACED:
        shape = [layout.extents[dim] + offset + 2 for dim, offset in layout.placement]
        for element in itertools.product(*(range(-1, n) for n in shape)):
            want = _writer(layout, element)
            assert tiles(layout, list(element), list(element)) == ({want} if want else set())
            for tile in itertools.product(*(range(g) for g in layout.grid)):
                inside = bool(layout.contains(list(tile), list(element), list(element)))
                assert inside == (tile == want), (layout.producer, element, tile)


def test_a_placed_box_meets_the_tiles_of_its_elements():
    import itertools

    # buffer rows 5 .. 10 hold the array's columns, buffer columns 0 .. 7 its rows: tile (i, j)
    # writes rows [2j + 5, 2j + 7) and columns [4i, 4i + 4); rows 3 .. 4 are no tile's
    layout = PLACED[0]
    lo, hi = [3, 3], [6, 8]
    want = {_writer(layout, e) for e in itertools.product(range(3, 7), range(3, 9))} - {None}
    assert tiles(layout, lo, hi) == want == {(0, 0), (1, 0)}
    assert layout.region((1, 2)) == "[9, 11) x [4, 8)"
