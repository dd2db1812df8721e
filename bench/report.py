"""Tables, JSON and plots for benchmark results (device name, warm-up, reps, median, spread)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def missing_gpu(tool: str) -> bool:
    """True, with one line on stderr, where no GPU can run `tool` (a sweep's entry point answers
    a machine without one with that line and exit status 1, not a traceback)."""
    import sys

    from tilesync.runtime.device import gpu_available

    available, why = gpu_available()
    if not available:
        print(f"{tool}: error: no usable NVIDIA GPU: {why}", file=sys.stderr)
    return not available


def turn_counts(reps: int, turns: int) -> list[int]:
    """How many of `reps` timed runs each of `turns` turns takes (bench.mlp.time_in_turns), in
    order: the first reps % turns of them one more than the others."""
    return [reps // turns + (turn < reps % turns) for turn in range(turns)]


def floor_ms(flops: float, nbytes: float, rates: Mapping[str, Any]) -> float:
    """The floor of a kernel or chain: its flops at the measured peak rate, or its bytes at the
    measured copy bandwidth (bytes read + written per second), the longer; `rates` holds
    "peak_tflops" and "copy_gbps" measured in the same run."""
    return max(flops / (rates["peak_tflops"] * 1e12), nbytes / (rates["copy_gbps"] * 1e9)) * 1e3


def _modes(row: dict[str, Any]) -> Mapping[str, dict[str, Any]]:
    return row.get("modes", {})


def settle_floors(result: dict[str, Any], label: Callable[[dict[str, Any]], str],
                  timed: Callable[[dict[str, Any]], Mapping[str, dict[str, Any]]] = _modes
                  ) -> dict[str, Any]:
    """Set every row's floor at the run's measured peak: the highest flop rate and the highest
    byte rate measured in the run, the probes' (result["rates"]: cuBLAS's square GEMMs, a device
    copy) and every timed form's (`timed(row)`'s records: the row's "flops" and "floor_bytes"
    over the form's median, as if every form did the row's operation), each recorded with
    where it was found in result["floor_rates"]; the rows' floor_ms recomputed at them, so that
    no median lies below its floor (check_floors). The probes alone are no peak: kernels in a
    run beat cuBLAS's square GEMMs (a conv chain at 0.913 of a floor at their rate,
    bench/results/conv-one-launch-nvidia-h200.json). `label(row)` names a row."""
    probes = result["rates"]
    peak = (probes["peak_tflops"], f"{probes.get('peak_probe', 'cuBLAS square GEMMs')} (probe)")
    copy = (probes["copy_gbps"], "device copy (probe)")
    for row in result["rows"]:
        if "flops" not in row or "floor_bytes" not in row:
            continue
        for name, record in timed(row).items():
            ms = record.get("median_ms") if isinstance(record, dict) else None
            if not ms:
                continue
            where = f"{label(row)} {name}"
            tflops, gbps = row["flops"] / ms / 1e9, row["floor_bytes"] / ms / 1e6
            if tflops > peak[0]:
                peak = (tflops, where)
            if gbps > copy[0]:
                copy = (gbps, where)
    rates = {"peak_tflops": peak[0], "peak_from": peak[1], "copy_gbps": copy[0],
             "copy_from": copy[1], "probe_tflops": probes["peak_tflops"],
             "probe_gbps": probes["copy_gbps"]}
    result["floor_rates"] = rates
    for row in result["rows"]:
        if "flops" in row and "floor_bytes" in row:
            row["floor_ms"] = floor_ms(row["flops"], row["floor_bytes"], rates)
    return rates


def check_floors(result: dict[str, Any], label: Callable[[dict[str, Any]], str],
                 timed: Callable[[dict[str, Any]], Mapping[str, dict[str, Any]]] = _modes
                 ) -> None:
    """An AssertionError naming the row and form of a median below its row's floor: impossible
    once settle_floors set the floors at the run's highest rates, so one means the floors were
    not settled on this run's records. A result recorded before settle_floors existed (no
    "floor_rates") has its floors as recorded, not checked."""
    if "floor_rates" not in result:
        return
    for row in result["rows"]:
        floor = row.get("floor_ms")
        if not floor:
            continue
        for name, record in timed(row).items():
            ms = record.get("median_ms") if isinstance(record, dict) else None
            if ms is not None and ms < floor * (1 - 1e-9):  # equal up to rounding at the peak
                raise AssertionError(
                    f"{result.get('experiment', 'bench')} {label(row)} {name}: median "
                    f"{ms:.6g} ms below its floor {floor:.6g} ms (floor rates "
                    f"{result['floor_rates']}): floors not settled on this run's records")


def floor_rates_text(result: dict[str, Any], probe: str) -> tuple[str, str]:
    """How a table states the floor's two rates: the run's highest and where each was found
    (settle_floors), or for a result recorded before, `probe`'s rate and the copy bandwidth as
    recorded."""
    rates = result.get("floor_rates")
    if rates is None:
        recorded = result["rates"]
        return (f"{recorded['peak_tflops']:.0f} TFLOP/s ({probe}, this run; peak: as recorded)",
                f"{recorded['copy_gbps']:.0f} GB/s (device copy, this run)")
    return (f"{rates['peak_tflops']:.0f} TFLOP/s (the run's highest: {rates['peak_from']})",
            f"{rates['copy_gbps']:.0f} GB/s (the run's highest: {rates['copy_from']})")


def grouped_bars(ax, rows: list[dict[str, Any]], modes: list[str], bar) -> None:
    """One group of bars per row, one bar per mode: `bar(row, mode)` -> (height, error below,
    error above) or None (no bar)."""
    width = 0.8 / max(1, len(modes))
    for k, mode in enumerate(modes):
        xs, ys, lo, hi = [], [], [], []
        for i, row in enumerate(rows):
            found = bar(row, mode)
            if found is None:
                continue
            xs.append(i + (k - (len(modes) - 1) / 2) * width)
            for column, value in zip((ys, lo, hi), found, strict=True):
                column.append(value)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=mode.replace("_", " "))


def speedup_bars(ax, rows: list[dict[str, Any]], modes: list[str], speed) -> None:
    """grouped_bars of `speed(row, mode)` -> (speedup, the mode's timing record) or None; the
    record's p10-p90 spread as the bar's error."""
    def bar(row, mode):
        found = speed(row, mode)
        if found is None:
            return None
        value, rec = found
        return (value, value - value * rec["median_ms"] / rec["p90_ms"],
                value * rec["median_ms"] / rec["p10_ms"] - value)

    grouped_bars(ax, rows, modes, bar)
    ax.axhline(1.0, color="gray", lw=0.8)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def copy_table(result: dict[str, Any]) -> str:
    lines = [f"copy chain (§V-D): {result['tiles']} tiles of {result['tile_elems']} floats, "
             f"{result['waves']:.2f} waves, {result['blocks_per_sm']} blocks/SM",
             f"{'mode':<12} {'median ms':>10} {'p10 ms':>9} {'p90 ms':>9} {'reps':>5}"]
    for mode, t in result["modes"].items():
        lines.append(f"{mode:<12} {t['median_ms']:>10.4f} {t['p10_ms']:>9.4f} "
                     f"{t['p90_ms']:>9.4f} {t['reps']:>5}")
    lines.append(f"tile-sync / stream-sync = {result['ratio_tile_over_stream']:.3f} "
                 f"({result['overhead_us']:+.1f} us; goal {result['goal']})")
    return "\n".join(lines)


def waves_table(result: dict[str, Any]) -> str:
    lines = [f"synthetic waves: {result['block']} threads/block, {result['blocks_per_sm']} "
             f"blocks/SM, tiles of {result['tile_us']} us ({result['iters']} FMAs/element)",
             f"{'waves':>6} {'tiles':>6} {'stream ms':>10} {'tile ms':>9} {'speedup':>8} "
             f"{'ideal':>6} {'meas/ideal':>10}"]
    for r in result["rows"]:
        lines.append(f"{r['waves']:>6.1f} {r['tiles']:>6} "
                     f"{r['modes']['stream_sync']['median_ms']:>10.4f} "
                     f"{r['modes']['tile_sync']['median_ms']:>9.4f} {r['speedup']:>8.3f} "
                     f"{r['ideal_speedup']:>6.3f} {r['speedup_over_ideal']:>10.3f}")
    lines.append(f"goal: {result['goal']}")
    return "\n".join(lines)


def tilesync_commit() -> str:
    """The commit a result is recorded at: TILESYNC_COMMIT, else the short hash of the git
    checkout tilesync runs from, else "unknown" (an installed copy)."""
    if os.environ.get("TILESYNC_COMMIT"):
        return os.environ["TILESYNC_COMMIT"]
    checkout = Path(__file__).resolve().parents[1]
    try:
        proc = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else "unknown"


def write_json(result: dict[str, Any], out_dir: Path, name: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{slug(result['device']['name'])}.json"
    path.write_text(json.dumps(result, indent=1, sort_keys=True))
    return path


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None where matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save_figure(plt, fig, result: dict[str, Any], out_dir, name: str) -> Path:
    """Write `fig` as <name>-<device>.png in `out_dir` and close it."""
    fig.tight_layout()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{slug(result['device']['name'])}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot(result: dict[str, Any], out_dir: Path, name: str) -> Path | None:
    """A PNG of the medians with p10–p90 bars; skipped (None) where matplotlib is missing."""
    plt = pyplot()
    if plt is None:
        return None
    modes = ("stream_sync", "tile_sync")
    if result["experiment"] == "copy_chain":
        groups = [(f"{r['tile_elems']} floats/tile", r["modes"]) for r in result["sizes"]]
    elif result["experiment"] == "stage_chains":
        groups = [(f"{r['stages']}x{r['dependency']}\n{r['waves']}w", r["modes"])
                  for r in result["rows"]]
        modes = ("stream_sync", "tile+wait_kernel", "tile+pdl", "row+pdl")
    else:
        groups = [(f"{r['waves']} waves", r["modes"]) for r in result["rows"]]
    fig, ax = plt.subplots(figsize=(max(7, len(groups) * 0.9), 4))
    width = 0.8 / len(modes)
    for k, mode in enumerate(modes):
        xs = [i + (k - (len(modes) - 1) / 2) * width for i in range(len(groups))]
        nan = {"median_ms": float("nan"), "p10_ms": float("nan"), "p90_ms": float("nan")}
        timing = [g[1].get(mode, nan) for g in groups]
        med = [t["median_ms"] for t in timing]
        lo = [t["median_ms"] - t["p10_ms"] for t in timing]
        hi = [t["p90_ms"] - t["median_ms"] for t in timing]
        ax.bar(xs, med, width, yerr=[lo, hi], label=mode.replace("_", " "), capsize=3)
    ax.set_xticks(range(len(groups)), [g[0] for g in groups])
    ax.set_ylabel("time (ms, median, p10–p90)")
    ax.set_title(f"{name} on {result['device']['name']}")
    ax.legend()
    return save_figure(plt, fig, result, out_dir, name)
