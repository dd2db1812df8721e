"""tilesync's dialects: `get_all_dialects()` maps each name to a lazy loader."""

from collections.abc import Callable

from xdsl.ir import Dialect

from tilesync.compat import (
    gpu_syntax,  # noqa: F401  (installs upstream gpu syntax)
    lexer,  # noqa: F401  (string literals lexed in linear time)
)


def _sync() -> Dialect:
    from tilesync.dialects.sync import Sync

    return Sync


def _dataflow() -> Dialect:
    from tilesync.dialects.dataflow import Dataflow

    return Dataflow


def _nvvm() -> Dialect:
    from tilesync.dialects.nvvm import NVVM

    return NVVM


def _llvmx() -> Dialect:
    from tilesync.dialects.llvmx import LLVMX

    return LLVMX


def _graph() -> Dialect:
    from tilesync.dialects.graph import Graph

    return Graph


def _tile() -> Dialect:
    from tilesync.dialects.tile import Tile

    return Tile


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    return {"sync": _sync, "dataflow": _dataflow, "nvvm": _nvvm, "llvmx": _llvmx,
            "tile": _tile, "graph": _graph}


def all_dialects_with_xdsl() -> dict[str, Callable[[], Dialect]]:
    """xDSL's own dialects plus tilesync's, by name."""
    from xdsl.dialects import get_all_dialects as xdsl_dialects

    dialects = dict(xdsl_dialects())
    dialects.update(get_all_dialects())
    return dialects
