"""bench/experiments.py's check without a GPU: the copy chain's outputs poisoned after the
warm-up, so that the check reads what the timed runs wrote (stand-ins for the driver)."""

from __future__ import annotations

import numpy as np
import pytest

from tilesync.bench import experiments


class _Buffer:
    """A DeviceBuffer on the host."""

    def __init__(self, array: np.ndarray):
        self.array = array
        self.nbytes = array.nbytes

    @classmethod
    def from_numpy(cls, array):
        return cls(array.copy())

    @classmethod
    def empty(cls, n, dtype):
        return cls(np.empty(n, dtype))

    def fill_bytes(self, value: int) -> None:
        self.array.view(np.uint8)[:] = value

    def to_numpy(self) -> np.ndarray:
        return self.array.copy()


class _Stream:
    @classmethod
    def highest_priority(cls):
        return cls()

    def wait_event(self, event) -> None:
        pass

    def synchronize(self) -> None:
        pass


class _Event:
    def record(self, stream=None):
        return self


def test_the_copy_chains_timed_runs_are_what_its_check_reads(monkeypatch):
    """A consumer that copies on its warm-up runs only (its timed runs write nothing) fails the
    check: the outputs are poisoned between the warm-up and the timed runs (poisoned once
    before the warm-up, the warm-up's copy passed it)."""
    import importlib
    from types import SimpleNamespace

    from tilesync.runtime import buffers, device, semaphores, stream

    launch = importlib.import_module("tilesync.runtime.launch")  # the module, not its function

    warmup, reps = 2, 3
    consumer_runs = [0]

    def launch_(kernel, grid, block, args, stream=None):
        source, target = args[0], args[1]
        if kernel == "consumer":
            consumer_runs[0] += 1
            if consumer_runs[0] > warmup:  # a timed run: writes nothing
                return
        target.array[:] = source.array

    def poison_async(stream, outputs):
        for buffer in outputs:
            buffer.fill_bytes(0xFF)

    monkeypatch.setattr(device, "get_device", lambda: SimpleNamespace(sm_count=2))
    monkeypatch.setattr(experiments, "load_chain", lambda example, block:
                        experiments.ChainKernels("producer", "consumer", block, 1, 0.0, (0, 0)))
    monkeypatch.setattr(buffers, "DeviceBuffer", _Buffer)
    monkeypatch.setattr(semaphores, "SemaphoreArray", lambda tiles: SimpleNamespace(
        next_epoch=lambda: 1))
    monkeypatch.setattr(launch, "launch", launch_)
    monkeypatch.setattr(stream, "Stream", _Stream)
    monkeypatch.setattr(stream, "Event", _Event)
    monkeypatch.setattr(stream, "elapsed_ms", lambda start, end: 0.1)
    monkeypatch.setattr(experiments, "poison_async", poison_async, raising=False)
    run_chain = experiments.run_chain

    def each_mode_anew(*args, **kwargs):
        consumer_runs[0] = first_run
        return run_chain(*args, **kwargs)

    monkeypatch.setattr(experiments, "run_chain", each_mode_anew)
    first_run = 0
    with pytest.raises(AssertionError, match="copy_chain/stream_sync: 16 elements not written"):
        experiments.copy_chain(warmup, reps, tile_elems=8)
    first_run = -reps  # every run copies: passes
    assert experiments.copy_chain(warmup, reps, tile_elems=8)["modes"]["stream_sync"]["reps"] \
        == reps
