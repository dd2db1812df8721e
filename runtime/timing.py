"""Timing GPU work with CUDA events: warm-up, repetitions, and robust statistics."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Timing:
    """Event-measured durations of the repetitions of one region, in milliseconds."""

    samples_ms: tuple[float, ...]
    warmup: int
    reps: int

    @classmethod
    def from_samples(cls, samples_ms: Sequence[float], warmup: int) -> Timing:
        if not samples_ms:
            raise ValueError("a Timing needs at least one sample")
        return cls(tuple(float(s) for s in samples_ms), warmup, len(samples_ms))

    @property
    def median_ms(self) -> float:
        return float(statistics.median(self.samples_ms))

    @property
    def mean_ms(self) -> float:
        return float(statistics.fmean(self.samples_ms))

    @property
    def min_ms(self) -> float:
        return min(self.samples_ms)

    @property
    def max_ms(self) -> float:
        return max(self.samples_ms)

    @property
    def stdev_ms(self) -> float:
        """Sample standard deviation (0 for a single sample)."""
        return statistics.stdev(self.samples_ms) if len(self.samples_ms) > 1 else 0.0

    @property
    def p10_ms(self) -> float:
        return float(np.percentile(self.samples_ms, 10))

    @property
    def p90_ms(self) -> float:
        return float(np.percentile(self.samples_ms, 90))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["samples_ms"] = list(self.samples_ms)
        for name in ("median", "mean", "min", "max", "stdev", "p10", "p90"):
            data[f"{name}_ms"] = getattr(self, f"{name}_ms")
        return data

    def __str__(self) -> str:
        return (
            f"median {self.median_ms:.4f} ms (p10 {self.p10_ms:.4f}, p90 {self.p90_ms:.4f}, "
            f"{self.reps} reps after {self.warmup} warm-up)"
        )


def time_region(
    fn: Callable[[], Any], stream: Any = None, warmup: int = 10, reps: int = 50,
    hold_ns_per_rep: int = 0, hold: Callable[[int, Any], None] | None = None,
) -> Timing:
    """Time `fn`, which enqueues GPU work on `stream`, with an event pair per repetition.

    Warm-up runs first (module loading, caches, clocks) and is synchronized; then all
    repetitions are enqueued back to back and synchronized once, so the host does not add gaps
    beyond its own launch cost. With `hold_ns_per_rep`, a hold kernel of that many ns per
    repetition goes first, so that the host's launch cost is hidden even for work shorter than
    it (each sample is then the device time of one repetition in a back-to-back sequence);
    `hold(ns, stream)` enqueues it (tilesync.harness.timing.hold_stream: a compiled kernel, so
    it comes from above the runtime).
    """
    from tilesync.runtime.launch import synchronize
    from tilesync.runtime.stream import Event, elapsed_ms

    if reps <= 0:
        raise ValueError(f"reps must be positive, got {reps}")
    if warmup < 0:
        raise ValueError(f"warmup must not be negative, got {warmup}")
    for _ in range(warmup):
        fn()
    synchronize(stream)
    if hold_ns_per_rep > 0:
        if hold is None:
            raise ValueError("hold_ns_per_rep needs hold=, a function that enqueues the hold "
                             "kernel (tilesync.harness.timing.hold_stream)")
        hold(hold_ns_per_rep * reps, stream)
    pairs = []
    for _ in range(reps):
        start, end = Event(), Event()
        start.record(stream)
        fn()
        end.record(stream)
        pairs.append((start, end))
    synchronize(stream)
    return Timing.from_samples([elapsed_ms(start, end) for start, end in pairs], warmup)


__all__ = ["Timing", "time_region"]
