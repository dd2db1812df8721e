"""`tilesync bench torch`'s table and plot from a recorded result (no GPU, no torch needed)."""

from __future__ import annotations

import pytest

from tilesync.bench.torch_models import torch_plot, torch_table


def _mode(ms: float) -> dict:
    return {"median_ms": ms, "p10_ms": 0.9 * ms, "p90_ms": 1.1 * ms, "rel_error": 1e-3}


RESULT = {"library": "torch 2.11", "warmup": 1, "reps": 3, "seconds": 1.0, "device": "test",
          "rows": [{"model": "nerf_mlp_rays", "floor_ms": 0.05,
                    "modes": {"eager": _mode(1.0), "eager graph": _mode(0.8),
                              "torch.compile": _mode(0.7), "tilesync": _mode(0.4),
                              "tilesync graph": _mode(0.32),
                              "tilesync (forced)": {"error": "RuntimeError: x"}}}]}


def test_table_has_the_graph_column_and_the_floor():
    table = torch_table(RESULT)
    assert "vs graph" in table.splitlines()[1]
    tilesync = next(line for line in table.splitlines() if " tilesync graph " in line)
    assert "3.125" in tilesync and "2.500" in tilesync  # 1.0 / 0.32 and 0.8 / 0.32
    assert "floor" in table and "0.0500" in table and "FAILED: RuntimeError" in table


def test_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    assert torch_plot(RESULT, tmp_path, "torch").exists()
