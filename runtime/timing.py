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


HOLD_KERNEL = """
builtin.module {
  gpu.module @tilesync_hold {
    gpu.func @hold(%ns: i64) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>} {
      %start = nvvm.read.ptx.sreg.globaltimer : i64
      scf.while () : () -> () {
        %now = nvvm.read.ptx.sreg.globaltimer : i64
        %elapsed = arith.subi %now, %start : i64
        %early = arith.cmpi slt, %elapsed, %ns : i64
        scf.condition(%early)
      } do {
        %nap = arith.constant 1000 : i32
        nvvm.nanosleep %nap : i32
        scf.yield
      }
      gpu.return
    }
  }
}
"""
"""One thread that keeps the stream busy for `ns` nanoseconds (read off %globaltimer)."""

_hold_kernel: list[Any] = []


def hold_stream(ns: int, stream: Any = None) -> None:
    """Enqueue HOLD_KERNEL: the stream's next work starts `ns` after it starts, so the host can
    enqueue that work meanwhile and it then runs back to back, without the host's launch gaps
    (nvbench's blocking kernel, with a time limit instead of a host flag: it cannot hang)."""
    from tilesync.runtime.launch import launch

    if not _hold_kernel:
        import tilesync
        from tilesync.runtime.device import get_device
        from tilesync.runtime.module import load_ptx

        program = tilesync.compile(HOLD_KERNEL, target=get_device().arch)
        module = load_ptx(program.ptx, "tilesync_hold")
        _hold_kernel.append(module.function("hold", program.kernels["hold"].params))
    launch(_hold_kernel[0], 1, 1, [int(ns)], stream=stream)


def time_region(
    fn: Callable[[], Any], stream: Any = None, warmup: int = 10, reps: int = 50,
    hold_ns_per_rep: int = 0,
) -> Timing:
    """Time `fn`, which enqueues GPU work on `stream`, with an event pair per repetition.

    Warm-up runs first (module loading, caches, clocks) and is synchronized; then all
    repetitions are enqueued back to back and synchronized once, so the host does not add gaps
    beyond its own launch cost. With `hold_ns_per_rep`, a hold kernel of that many ns per
    repetition goes first, so that the host's launch cost is hidden even for work shorter than
    it (each sample is then the device time of one repetition in a back-to-back sequence).
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
        hold_stream(hold_ns_per_rep * reps, stream)
    pairs = []
    for _ in range(reps):
        start, end = Event(), Event()
        start.record(stream)
        fn()
        end.record(stream)
        pairs.append((start, end))
    synchronize(stream)
    return Timing.from_samples([elapsed_ms(start, end) for start, end in pairs], warmup)


__all__ = ["HOLD_KERNEL", "Timing", "hold_stream", "time_region"]
