"""bench.report's shared pieces without matplotlib: the grouped speedup bars the MLP and conv
plots draw, on a recording stand-in for the axes."""

from __future__ import annotations

import pytest

from tilesync.bench.report import floor_ms, speedup_bars


class RecordingAxes:
    def __init__(self) -> None:
        self.bars: list[dict] = []
        self.lines: list[float] = []

    def bar(self, xs, ys, width, yerr, capsize, label):
        self.bars.append({"xs": xs, "ys": ys, "width": width, "yerr": yerr, "label": label})

    def axhline(self, y, **_):
        self.lines.append(y)


def test_one_bar_per_row_and_mode_with_the_spread_as_error():
    rec = {"median_ms": 1.0, "p10_ms": 0.8, "p90_ms": 1.25}
    rows = [{"name": "a"}, {"name": "b"}]

    def speed(row, mode):  # mode "x" is missing on row b
        return None if (row["name"], mode) == ("b", "x") else (2.0, rec)

    ax = RecordingAxes()
    speedup_bars(ax, rows, ["x", "row_sync"], speed)
    x, row_sync = ax.bars
    assert x["label"] == "x" and len(x["ys"]) == 1 and row_sync["label"] == "row sync"
    assert row_sync["xs"] == pytest.approx([0.2, 1.2]) and row_sync["width"] == pytest.approx(0.4)
    lo, hi = row_sync["yerr"]
    assert lo == pytest.approx([2.0 - 2.0 / 1.25] * 2)
    assert hi == pytest.approx([2.0 / 0.8 - 2.0] * 2)
    assert ax.lines == [1.0]


def test_the_floor_is_the_longer_of_compute_and_memory():
    rates = {"peak_tflops": 100.0, "copy_gbps": 1000.0}
    assert floor_ms(1e12, 1e6, rates) == pytest.approx(10.0)  # 1 TFLOP at 100 TFLOP/s
    assert floor_ms(1e6, 1e10, rates) == pytest.approx(10.0)  # 10 GB at 1000 GB/s


@pytest.mark.parametrize("sweep", ["tma_sweep", "conv_sweep", "mlp_sweep"])
def test_a_sweep_without_a_gpu_says_so_in_one_line(sweep, monkeypatch, capsys):
    import importlib

    from tilesync.runtime import device

    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no driver (test)"))
    assert importlib.import_module(f"tilesync.bench.{sweep}").main([]) == 1
    err = capsys.readouterr().err
    assert err == f"{sweep}: error: no usable NVIDIA GPU: no driver (test)\n"
