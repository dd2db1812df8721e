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


def test_modes_are_timed_in_one_set_of_turns(monkeypatch):
    from tilesync.bench import torch_models
    from tilesync.frontend.torch import cost

    calls = []

    def fake_sample_ms(fns, warmup, rounds, block):
        calls.append((len(fns), warmup, rounds, block))
        return [[float(10 * i + k) for k in range(rounds * block)] for i, _ in enumerate(fns)]

    monkeypatch.setattr(cost, "sample_ms", fake_sample_ms)
    timed = torch_models._timed_in_turns({"eager": None, "tilesync": None}, 2, 50)
    # all modes in one call, so each block of one mode sits between blocks of the others
    assert calls == [(2, 2, 50 // torch_models.TURN, torch_models.TURN)]
    assert timed["eager"]["median_ms"] == 25.0 and timed["tilesync"]["median_ms"] == 35.0
    assert timed["tilesync"]["p10_ms"] == 15.0 and timed["tilesync"]["p90_ms"] == 55.0
    assert "in 1 turns" in torch_table(RESULT)  # a result recorded before the turns
