"""Fixtures of the bench tests: a plot drawn through stand-ins for matplotlib (none needed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


class _Axes:
    def __init__(self) -> None:
        self.ylabel: str | None = None
        self.xticklabels: list[str] = []

    def set_xticks(self, ticks, labels, **_) -> None:
        self.xticklabels = list(labels)

    def set_ylabel(self, label: str) -> None:
        self.ylabel = label

    def set_title(self, *_) -> None:
        pass

    def legend(self, **_) -> None:
        pass


class _Pyplot:
    def __init__(self) -> None:
        self.ax = _Axes()

    def subplots(self, **_):
        return object(), self.ax


@pytest.fixture
def drawn_bars(monkeypatch) -> Callable[[Callable, dict[str, Any]], tuple[dict, Any]]:
    """draw(plot, result) -> ({(row index, mode): bar height}, the axes: its ylabel and
    xticklabels): what `plot(result, out_dir)` draws through bench.report's speedup_bars."""
    from tilesync.bench import report

    def draw(plot, result):
        fake, bars = _Pyplot(), {}

        def speedup_bars(ax, rows, modes, speed):
            for i, row in enumerate(rows):
                for mode in modes:
                    if (found := speed(row, mode)) is not None:
                        bars[(i, mode)] = found[0]

        monkeypatch.setattr(report, "pyplot", lambda: fake)
        monkeypatch.setattr(report, "speedup_bars", speedup_bars)
        monkeypatch.setattr(report, "save_figure", lambda plt, fig, result, out_dir, name: name)
        assert plot(result, "unused") is not None
        return bars, fake.ax

    return draw
