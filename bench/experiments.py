"""The spine's two end-to-end experiments, on a GPU, through the whole compiler.

1. copy chain (cuSync paper §V-D): a producer copies an array tile by tile, a consumer copies it
   on, one full wave each at the maximum blocks per SM. Tile sync (consumer on a second stream,
   waiting per tile) against stream sync (both kernels in one stream). Measures overhead: the
   wave model predicts no gain, so the goal is a ratio ≤ 1.02.
2. synthetic waves: two kernels of equal tiles (a fixed duration each, see
   examples/synthetic_chain.mlir) at 0.6 / 1.2 / 2.2 / 3.2 waves; the measured speedup against
   the wave model's ideal (ceil(Wp) + ceil(Wc)) / ceil(Wp + Wc).

Both modes launch *the same kernels* (waits that are already satisfied cost one acquire load).
Each mode's outputs (the middle array and the result) are poisoned with NaN after its warm-up
runs, in stream order before its timed runs (`poison_async`), and the result is checked element
by element against numpy after them: what the timed runs wrote, not each run's.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from typing import Any

import numpy as np

import tilesync
from tilesync.analysis.wave_model import predict_chain
from tilesync.contract import target_for_device

MODES = ("stream_sync", "tile_sync")
EPOCH = object()  # placeholder in an argument list for the launch's epoch


def example_text(name: str) -> str:
    return resources.files("tilesync").joinpath("examples", name).read_text()


def summarize(samples_ms: list[float], warmup: int) -> dict[str, Any]:
    ordered = sorted(samples_ms)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "median_ms": statistics.median(ordered),
        "mean_ms": statistics.fmean(ordered),
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
        "stdev_ms": statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        "p10_ms": pick(0.10),
        "p90_ms": pick(0.90),
        "warmup": warmup,
        "reps": len(ordered),
        "samples_ms": samples_ms,
    }


@dataclass
class ChainKernels:
    """A compiled producer/consumer pair loaded on the device."""

    producer: Any
    consumer: Any
    block: int
    blocks_per_sm: int
    compile_seconds: float
    registers: tuple[int, int]


def load_chain(example: str, block: int) -> ChainKernels:
    import time

    from tilesync.runtime.device import get_device, occupancy
    from tilesync.runtime.module import load_ptx

    device = get_device()
    start = time.perf_counter()
    target = target_for_device(device.arch)
    program = tilesync.compile(example_text(example), target=target)
    seconds = time.perf_counter() - start
    module = load_ptx(program.ptx, example)
    producer = module.function("producer", program.kernels["producer"].params)
    consumer = module.function("consumer", program.kernels["consumer"].params)
    per_sm = min(occupancy(producer, block), occupancy(consumer, block))
    return ChainKernels(producer, consumer, block, per_sm, seconds,
                        (producer.num_regs, consumer.num_regs))


def poison_async(stream, buffers) -> None:
    """Every byte of `buffers` (DeviceBuffers) 0xFF (NaN in fp32) on `stream`, not waited for:
    in stream order after the runs before it, before those after."""
    from cuda.bindings import driver

    from tilesync.runtime.errors import check

    for buffer in buffers:
        if buffer.nbytes:
            check(driver.cuMemsetD8Async(buffer.ptr, 0xFF, buffer.nbytes, stream.handle),
                  "cuMemsetD8Async")


def run_chain(kernels: ChainKernels, grid: int, producer_args, consumer_args, mode: str,
              warmup: int, reps: int, epochs, outputs=()) -> list[float]:
    """Enqueue warm-up + timed repetitions without host syncs in between; event times each.
    `outputs` (DeviceBuffers the runs write) are poisoned between the warm-up and the timed
    repetitions (poison_async, outside every timed span), so that a check after them reads
    what the timed runs wrote.

    Argument lists hold EPOCH where the kernel takes the launch's epoch (a fresh one per rep).

    stream_sync: producer then consumer on one stream. tile_sync: producer on a high-priority
    stream, consumer on a second stream; each repetition is fenced by events on both streams.
    """
    from tilesync.runtime.launch import launch
    from tilesync.runtime.stream import Event, Stream, elapsed_ms

    main = Stream.highest_priority()
    side = Stream()
    pairs = []
    for i in range(warmup + reps):
        if i == warmup:  # the last warm-up's consumer joined `main`: nothing writes after it
            poison_async(main, outputs)
        epoch = epochs()
        p_args = [epoch if a is EPOCH else a for a in producer_args]
        c_args = [epoch if a is EPOCH else a for a in consumer_args]
        start, end, side_done = Event(), Event(), Event()
        start.record(main)
        launch(kernels.producer, grid, kernels.block, p_args, stream=main)
        if mode == "stream_sync":
            launch(kernels.consumer, grid, kernels.block, c_args, stream=main)
        else:
            side.wait_event(start)
            launch(kernels.consumer, grid, kernels.block, c_args, stream=side)
            side_done.record(side)
            main.wait_event(side_done)
        end.record(main)
        if i >= warmup:
            pairs.append((start, end))
    main.synchronize()
    side.synchronize()
    return [elapsed_ms(s, e) for s, e in pairs]


def _check(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float = 0.0) -> float:
    """Every element written, ‖got − want‖ / ‖want‖ ≤ rtol and no element off by more than
    atol (+ rtol·|want|); returns the norm-relative error."""
    if not np.all(np.isfinite(got)):
        raise AssertionError(f"{name}: {int(np.sum(~np.isfinite(got)))} elements not written")
    diff = np.abs(got.astype(np.float64) - want)
    err = float(np.linalg.norm(diff) / max(np.linalg.norm(want), 1e-30))
    worst = int(np.argmax(diff - rtol * np.abs(want)))
    if err > rtol or diff[worst] > atol + rtol * abs(want[worst]):
        raise AssertionError(f"{name}: relative error {err:.3g} (tolerance {rtol}); element "
                             f"{worst}: got {got[worst]}, want {want[worst]}")
    return err


def copy_chain(warmup: int = 10, reps: int = 50, waves: float = 1.0, tile_elems: int = 8192,
               seed: int = 0) -> dict[str, Any]:
    """§V-D: tiles of `tile_elems` floats, 256 threads a block, `waves` full waves per kernel."""
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.device import get_device
    from tilesync.runtime.semaphores import SemaphoreArray

    device = get_device()
    kernels = load_chain("copy_chain.mlir", block=256)
    tiles = max(1, round(waves * device.sm_count * kernels.blocks_per_sm))
    n = tiles * tile_elems
    rng = np.random.default_rng(seed)
    src_host = rng.standard_normal(n, dtype=np.float32)
    src = DeviceBuffer.from_numpy(src_host)
    mid, dst = DeviceBuffer.empty(n, np.float32), DeviceBuffer.empty(n, np.float32)
    sems = SemaphoreArray(tiles)
    result: dict[str, Any] = {"experiment": "copy_chain", "tiles": tiles, "elements": n,
                              "tile_elems": tile_elems, "block": 256,
                              "blocks_per_sm": kernels.blocks_per_sm,
                              "waves": tiles / (device.sm_count * kernels.blocks_per_sm),
                              "registers": kernels.registers,
                              "compile_seconds": kernels.compile_seconds, "modes": {}}
    for mode in MODES:
        mid.fill_bytes(0xFF)
        dst.fill_bytes(0xFF)  # NaN: an element no kernel wrote fails the check
        samples = run_chain(kernels, tiles, [src, mid, sems, EPOCH, tile_elems],
                            [mid, dst, sems, EPOCH, tile_elems],
                            mode, warmup, reps, sems.next_epoch, (mid, dst))
        _check(f"copy_chain/{mode}", dst.to_numpy(), src_host, 0.0)
        result["modes"][mode] = summarize(samples, warmup)
    stream_ms = result["modes"]["stream_sync"]["median_ms"]
    tile_ms = result["modes"]["tile_sync"]["median_ms"]
    result["ratio_tile_over_stream"] = tile_ms / stream_ms
    result["overhead_us"] = (tile_ms - stream_ms) * 1e3
    result["goal"] = "ratio <= 1.02"
    return result


def synthetic_reference(x: np.ndarray, iters: int) -> np.ndarray:
    y = x.astype(np.float64)
    # x_{k+1} = 0.999 x_k + 0.001, applied `iters` times (closed form, float64).
    a = 0.999 ** iters
    return a * y + (1.0 - a)


def synthetic_waves(wave_counts=(0.6, 1.2, 2.2, 3.2), iters: int = 100, tile_us: float = 50.0,
                    warmup: int = 5, reps: int = 30, seed: int = 0) -> dict[str, Any]:
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.device import get_device
    from tilesync.runtime.semaphores import SemaphoreArray

    device = get_device()
    kernels = load_chain("synthetic_chain.mlir", block=1024)
    per_wave = device.sm_count * kernels.blocks_per_sm
    tile_ns = int(tile_us * 1000)
    rows = []
    rng = np.random.default_rng(seed)
    for waves in wave_counts:
        tiles = max(1, round(waves * per_wave))
        n = tiles * 1024
        src_host = rng.uniform(-1, 1, n).astype(np.float32)
        want = synthetic_reference(synthetic_reference(src_host, iters), iters)
        src = DeviceBuffer.from_numpy(src_host)
        mid, dst = DeviceBuffer.empty(n, np.float32), DeviceBuffer.empty(n, np.float32)
        sems = SemaphoreArray(tiles)
        row: dict[str, Any] = {"waves": waves, "tiles": tiles,
                               "actual_waves": tiles / per_wave, "modes": {}}
        for mode in MODES:
            mid.fill_bytes(0xFF)
            dst.fill_bytes(0xFF)
            samples = run_chain(kernels, tiles, [src, mid, sems, EPOCH, iters, tile_ns],
                                [mid, dst, sems, EPOCH, iters, tile_ns], mode, warmup, reps,
                                sems.next_epoch, (mid, dst))
            row["rel_error"] = _check(f"waves {waves}/{mode}", dst.to_numpy(), want, 1e-4,
                                      atol=1e-3)
            row["modes"][mode] = summarize(samples, warmup)
        measured = row["modes"]["stream_sync"]["median_ms"] / row["modes"]["tile_sync"][
            "median_ms"]
        waves = Fraction(tiles, per_wave)
        ideal = float(predict_chain([waves, waves]).speedup)
        row.update(speedup=measured, ideal_speedup=ideal, speedup_over_ideal=measured / ideal)
        rows.append(row)
        for buf in (src, mid, dst):
            buf.close()
    return {"experiment": "synthetic_waves", "block": 1024, "iters": iters, "tile_us": tile_us,
            "blocks_per_sm": kernels.blocks_per_sm, "registers": kernels.registers,
            "compile_seconds": kernels.compile_seconds, "rows": rows,
            "goal": "speedup / ideal >= 0.95"}
