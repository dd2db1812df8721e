"""Entry point `xdsl.universe`: makes plain `xdsl-opt` see tilesync's dialects and passes."""

from xdsl.universe import Universe

from tilesync.dialects import get_all_dialects
from tilesync.transforms import get_all_passes

TILESYNC_UNIVERSE = Universe(all_dialects=get_all_dialects(), all_passes=get_all_passes())


def all_passes_with_xdsl():
    """xDSL's own passes (scf, affine, reconcile…) plus tilesync's, by name."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    passes = dict(xdsl_passes())
    passes.update(get_all_passes())
    return passes


def all_dialects_with_xdsl():
    """xDSL's own dialects plus tilesync's, by name."""
    from xdsl.dialects import get_all_dialects as xdsl_dialects

    dialects = dict(xdsl_dialects())
    dialects.update(get_all_dialects())
    return dialects
