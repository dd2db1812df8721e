"""kernels/softmax.py: the softmax kernel's sync hooks (what graph-to-stages' attention chain
synchronizes), and that without them the kernel has none."""

from __future__ import annotations

from xdsl.dialects import gpu, memref

from tilesync.dialects import sync
from tilesync.kernels.config import softmax_config
from tilesync.kernels.softmax import softmax_module


def _kernel(cfg) -> gpu.FuncOp:
    return next(op for op in softmax_module(cfg).walk() if isinstance(op, gpu.FuncOp))


def test_hooks_wrap_the_rows_of_the_block():
    cfg = softmax_config(64, 128, sync_hooks=True)
    body = list(_kernel(cfg).body.block.ops)
    tile = next(op for op in body if isinstance(op, sync.TileOp))
    load = next(op for op in body if isinstance(op, sync.LoadPointOp))
    store = next(op for op in body if isinstance(op, sync.StorePointOp))
    # at the top level of the kernel, where every thread reaches the barrier of a wait or post
    assert body.index(tile) < body.index(load) < body.index(store) == len(body) - 2
    assert load.operand.data == 0 and load.step is None
    assert list(load.tile) == list(store.tile) == list(tile.results)
    assert cfg.tile == (4, 128) and cfg.grid == (16, 1, 1)


def test_no_hooks_by_default():
    ops = list(_kernel(softmax_config(64, 128)).walk())
    assert not any(isinstance(op, sync.TileOp | sync.LoadPointOp | sync.StorePointOp)
                   for op in ops)
    assert any(isinstance(op, gpu.BlockIdOp) for op in ops)
    assert sum(isinstance(op, memref.StoreOp) for op in ops) == 4
