"""Shared pytest setup: tests marked @pytest.mark.gpu skip (never pass) where no GPU is usable.

The skip reason is gpu_available()'s: no driver, no device, or TILESYNC_DISABLE_GPU set.
GPU tests can also take the `gpu_device` fixture for the tilesync Device.
"""

from __future__ import annotations

import pytest


def _gpu_status() -> tuple[bool, str]:
    try:
        from tilesync.runtime.device import gpu_available
    except Exception as exc:  # the runtime itself is broken: say so rather than hide it
        return False, f"tilesync.runtime.device cannot be imported: {exc}"
    return gpu_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    available, reason = _gpu_status()
    if available:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture
def gpu_device():
    """The tilesync Device; skips the test where no GPU is usable (for unmarked tests too)."""
    available, reason = _gpu_status()
    if not available:
        pytest.skip(f"needs a GPU: {reason}")
    from tilesync.runtime.device import get_device

    return get_device()
