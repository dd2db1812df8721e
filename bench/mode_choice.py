"""The cost model's choice of mode (analysis/mode_cost.py) for the rows of bench mlp, bench conv
and bench attention, and its check: the chosen mode's (or the library's) measured time against
the best measured of the row.

Per row, each mode's stage program is read from its compiled entry (the host plan after its
passes, the kernels' registers and shared memory for their blocks per SM); the tile times come
from the row's measured stream-sync run of the same kernels (`mlp.baseline_mode`); the
library is the fastest of torch's forms the row measured (`fastest_library`: torch_graph or
torch_eager, and attention's torch_sdpa_graph or torch_sdpa_eager), measured. Nothing else of
the row's measurements is read.

Two checks are recorded. `within` is in-sample: the choice is made from the row's medians and
measured against the same medians (several modes' predictions, the stream-sync baselines', are
their own medians), kept so that records stay comparable. `held_out` is the honest one: the
choice made from the even turns of the row's runs (bench.mlp.time_in_turns: the forms take
turns, 0, 2, 4 of 5) and measured against the medians of the odd turns (1, 3); a row timed in
one turn (records from before the turns: a block of runs a mode) cannot be evaluated so, and
says so.

    python -m tilesync.bench.mode_choice --fit RESULT.json [RESULT.json ...]

A tile's work (what a stage's share of the measured time is in proportion to) is its flops
where every stage is a GEMM or a conv; attention's chain has a softmax, which has none, so
there every tile's work is its roofline time at the run's measured peak rate and copy
bandwidth (`tile_work`).

fits the device's mechanism costs to bench runs (least squares over every mode that is not a
stream-sync baseline; `mode_cost.MECHANISM_COSTS` records the fit of record) and prints each
row's choice with those costs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

from tilesync.analysis import mode_cost
from tilesync.bench import mlp
from tilesync.bench.report import floor_ms, turn_counts

LIBRARY_PREFIX = "torch"
"""The library's forms are the modes named after torch: torch_eager and torch_graph (bench mlp,
bench conv), torch_sdpa_eager and torch_sdpa_graph too (bench attention)."""
CHOSEN_ON, MEASURED_ON = "even turns (0, 2, ...)", "odd turns (1, 3, ...)"
"""The halves of a row's turns the held-out check chooses on and measures on."""


def is_library(mode: str) -> bool:
    return mode.startswith(LIBRARY_PREFIX)


def fastest_library(measured: Mapping[str, float]) -> str | None:
    """The fastest of the library's forms the row measured (`is_library`), None where it
    measured none: the library the model's choice is made against and counted as."""
    forms = {mode: ms for mode, ms in measured.items() if is_library(mode)}
    return min(forms, key=forms.__getitem__) if forms else None


def _library_ms(measured: Mapping[str, float]) -> float | None:
    library = fastest_library(measured)
    return None if library is None else measured[library]


def _stage_configs(bench: str, key: tuple, mode: str) -> dict[str, Any]:
    if bench == "mlp":
        spec = mlp.mode_spec(*key, mode)
        return {"gemm1": spec.cfg1, "gemm2": spec.cfg2}
    if bench == "attention":
        from tilesync.bench import attention

        if mode.startswith(attention.FUSED):  # the fused program's kernels
            fused = attention.fused_spec(key)
            merge = (fused.attention.combine,) if fused.attention.splits > 1 else ()
            return {cfg.name: cfg for cfg in (fused.qkv, fused.attention, *merge, fused.out)}
        spec = attention.attention_spec(key)  # every chain mode runs the same kernels
        return {cfg.name: cfg for cfg in
                (spec.qkv, spec.scores, spec.softmax, spec.context, spec.out)}
    from tilesync.bench import conv

    spec = conv.mode_spec(key, mode)
    return {"conv1": spec.conv1, "conv2": spec.conv2}


def stage_blocks_per_sm(configs: Mapping[str, Any], resources: Mapping[str, Any],
                        arch: str = "sm_90") -> dict[str, int]:
    """Blocks per SM of each stage's kernel (`mlp.kernel_occupancy`), at least 1."""
    return {name: max(1, mlp.kernel_occupancy(cfg, resources, arch).blocks_per_sm)
            for name, cfg in configs.items()}


def mode_shapes(bench: str, key: tuple, entries: Mapping[str, dict[str, Any]]
                ) -> dict[str, mode_cost.ModeShape]:
    """Each mode's ModeShape from its compile entry (bench mlp's / bench conv's)."""
    from tilesync.api import parse

    shapes = {}
    for mode, entry in entries.items():
        if "error" in entry:
            continue
        configs = _stage_configs(bench, key, mode)
        shapes[mode] = mode_cost.mode_shape(parse(entry["host"]),
                                            stage_blocks_per_sm(configs, entry["resources"]))
    return shapes


def tile_work(bench: str, key: tuple, mode: str,
              rates: Mapping[str, float] | None = None) -> dict[str, float]:
    """The work of a tile of each stage: its flops (the stage's over its tiles) where every
    stage is a GEMM or a conv; for attention, its floor at `rates` (a bench run's measured
    rates, `report.floor_ms`) from its flops and the bytes it reads and writes (a softmax
    block: its rows, read and written; a GEMM tile: its A rows and B columns over K, and its
    C tile)."""
    configs = _stage_configs(bench, key, mode)
    if bench != "attention":
        return {name: cfg.flops / math.prod(cfg.grid[:2]) for name, cfg in configs.items()}
    if rates is None:
        raise ValueError("attention's tile work needs the run's measured rates")
    from tilesync.kernels.config import AttentionConfig, CombineConfig, SoftmaxConfig

    work = {}
    for name, cfg in configs.items():
        tiles = math.prod(cfg.grid[:2])
        if isinstance(cfg, SoftmaxConfig | CombineConfig):  # no flops to share by
            work[name] = floor_ms(0, cfg.bytes / tiles, rates)
        elif isinstance(cfg, AttentionConfig):  # its q and O blocks, and k and v of its keys
            keys = cfg.cached + (cfg.tokens // 2 if cfg.causal else cfg.tokens)
            moved = 2 * cfg.head_width * (2 * cfg.block_m + 2 * keys)
            work[name] = floor_ms(cfg.flops / tiles, moved, rates)
        else:
            bm, bn, _ = cfg.tile
            moved = 2 * ((bm + bn) * cfg.K + bm * bn)  # fp16, read and written
            work[name] = floor_ms(cfg.flops / tiles, moved, rates)
    return work


def baseline_tile_times(bench: str, key: tuple, shapes: Mapping[str, mode_cost.ModeShape],
                        measured: Mapping[str, float], sms: int,
                        costs: mode_cost.MechanismCosts,
                        rates: Mapping[str, float] | None = None
                        ) -> dict[str, dict[str, float]]:
    """Per measured stream-sync baseline (`mlp.baseline_mode`) of the modes: its stages' tile
    times (`mode_cost.tile_times`; `rates`: the run's, for `tile_work`)."""
    out: dict[str, dict[str, float]] = {}
    for mode in shapes:
        base = mlp.baseline_mode(mode, measured)
        if base in measured and base in shapes and base not in out:
            out[base] = mode_cost.tile_times(shapes[base], measured[base],
                                             tile_work(bench, key, base, rates), sms, costs)
    return out


def predictions(bench: str, key: tuple, shapes: Mapping[str, mode_cost.ModeShape],
                measured: Mapping[str, float], sms: int,
                costs: mode_cost.MechanismCosts,
                rates: Mapping[str, float] | None = None) -> dict[str, float]:
    """Predicted ms of every mode whose stream-sync baseline was measured."""
    return _predicted(shapes, measured, sms, costs,
                      baseline_tile_times(bench, key, shapes, measured, sms, costs, rates))


def _predicted(shapes: Mapping[str, mode_cost.ModeShape], measured: Mapping[str, float],
               sms: int, costs: mode_cost.MechanismCosts,
               tau_of: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    return {mode: mode_cost.predict_ms(shape, tau_of[base], sms, costs)
            for mode, shape in shapes.items()
            if (base := mlp.baseline_mode(mode, measured)) in tau_of}


def row_choice(bench: str, key: tuple, shapes: Mapping[str, mode_cost.ModeShape],
               measured: Mapping[str, float], sms: int,
               costs: mode_cost.MechanismCosts,
               choice: mode_cost.Choice | None = None,
               rates: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The model's choice for one row (`choice`, default `_choice` from the modes that ran: one
    that failed is no candidate) and how it did, in-sample: `within` is the chosen mode's
    measured time over the best measured of ours and the library's forms, the same medians it
    chose from."""
    library = fastest_library(measured)
    if choice is None:
        choice = _choice(bench, key, shapes, measured, sms, costs, rates)
    return {**_outcome(choice, library, measured), "reason": choice.reason,
            "library": library,
            "predicted_ms": {m: round(t, 6) for m, t in choice.predicted_ms.items()}}


def _choice(bench: str, key: tuple, shapes: Mapping[str, mode_cost.ModeShape],
            measured: Mapping[str, float], sms: int, costs: mode_cost.MechanismCosts,
            rates: Mapping[str, float] | None = None) -> mode_cost.Choice:
    """mode_cost.choose from `measured`: the predictions of the modes that ran, against the
    fastest library form's time."""
    predicted = predictions(bench, key, shapes, measured, sms, costs, rates)
    return mode_cost.choose({m: t for m, t in predicted.items() if m in measured},
                            _library_ms(measured))


def _outcome(choice: mode_cost.Choice, library: str | None,
             measured: Mapping[str, float]) -> dict[str, Any]:
    """`choice` (the library: the form `library`) measured by `measured`: its time, the best of
    the candidates (the modes predicted and the library's forms) and its time over the best."""
    chosen = library if choice.mode == mode_cost.LIBRARY else choice.mode
    assert chosen is not None  # mode_cost.choose takes the library only where it was measured
    candidates = {m: t for m, t in measured.items()
                  if m in choice.predicted_ms or is_library(m)}
    best = min(candidates, key=candidates.__getitem__)
    return {"chosen": chosen, "chosen_ms": measured[chosen], "best": best,
            "best_ms": candidates[best], "within": measured[chosen] / candidates[best]}


def turn_samples(samples: Sequence[float], turns: int) -> list[list[float]]:
    """A form's samples per turn: bench.mlp.time_in_turns times `turns` turns in order, the
    first len(samples) % turns of them a run longer than the others."""
    out, start = [], 0
    for count in turn_counts(len(samples), turns):
        out.append(list(samples[start:start + count]))
        start += count
    return out


def half_medians(modes: Mapping[str, dict[str, Any]]
                 ) -> tuple[dict[str, float], dict[str, float]] | str:
    """Each measured mode's median over its even turns and over its odd turns
    (`turn_samples`); why not, where a mode was timed in fewer than two turns."""
    even: dict[str, float] = {}
    odd: dict[str, float] = {}
    for mode, record in modes.items():
        if "median_ms" not in record:
            continue
        turns, samples = record.get("turns", 1), record.get("samples_ms")
        if turns < 2 or not samples:
            return f"{mode} was timed in one turn (a block of runs): no turns to hold out"
        split = turn_samples(samples, turns)
        even[mode] = statistics.median(s for part in split[0::2] for s in part)
        odd[mode] = statistics.median(s for part in split[1::2] for s in part)
    return even, odd


def held_out_choice(bench: str, key: tuple, shapes: Mapping[str, mode_cost.ModeShape],
                    modes: Mapping[str, dict[str, Any]], sms: int,
                    costs: mode_cost.MechanismCosts,
                    rates: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The model's choice made from the row's even turns (its predictions' tile times and the
    library's time from their medians) and measured against the medians of its odd turns
    (`_outcome`), with the medians both halves gave the chosen mode; {"unavailable": why}
    where the row cannot be evaluated so (`half_medians`)."""
    halves = half_medians(modes)
    if isinstance(halves, str):
        return {"unavailable": halves}
    choosing, measuring = halves
    choice = _choice(bench, key, shapes, choosing, sms, costs, rates)
    outcome = _outcome(choice, fastest_library(choosing), measuring)
    return {"chosen_on": CHOSEN_ON, "measured_on": MEASURED_ON, **outcome,
            "chosen_ms_on_choosing_turns": choosing[outcome["chosen"]],
            "predicted_ms": {m: round(t, 6) for m, t in choice.predicted_ms.items()}}


def recorded_program(bench: str, key: tuple, entries: Mapping[str, dict[str, Any]],
                     measured: Mapping[str, float], sms: int,
                     costs: mode_cost.MechanismCosts, device_name: str | None,
                     choice: mode_cost.Choice,
                     tau_of: Mapping[str, Mapping[str, float]]) -> str:
    """The host program of `choice`'s mode predicted fastest, with the choice recorded on it
    (`mode_cost.record`, with the tile times `tau_of` its predictions came from) and its
    stages' blocks per SM (what the prediction read), as text."""
    from xdsl.dialects.builtin import IntegerAttr, i64

    from tilesync.api import parse
    from tilesync.contract import BLOCKS_PER_SM_ATTR
    from tilesync.dialects.sync import StageOp

    mode = choice.fastest
    base = mlp.baseline_mode(mode, measured)
    module = parse(entries[mode]["host"])
    blocks = stage_blocks_per_sm(_stage_configs(bench, key, mode), entries[mode]["resources"])
    for op in module.walk():
        if isinstance(op, StageOp) and op.sym_name.data in blocks:
            op.attributes[BLOCKS_PER_SM_ATTR] = IntegerAttr(blocks[op.sym_name.data], i64)
    mode_cost.record(module, mode_cost.ChoiceRecord(
        mode, choice, dict(tau_of[base]), base, measured[base], costs, sms, device_name or ""))
    return str(module)


def recorded_row_choice(bench: str, key: tuple, shapes: Mapping[str, mode_cost.ModeShape],
                        entries: Mapping[str, dict[str, Any]], measured: Mapping[str, float],
                        sms: int, costs: mode_cost.MechanismCosts, device_name: str | None,
                        rates: Mapping[str, float] | None = None) -> dict[str, Any]:
    """`row_choice` with the costs it used and its `recorded_program` ("program")."""
    tau_of = baseline_tile_times(bench, key, shapes, measured, sms, costs, rates)
    choice = mode_cost.choose(_predicted(shapes, measured, sms, costs, tau_of),
                              _library_ms(measured))
    return {**row_choice(bench, key, shapes, measured, sms, costs, choice),
            "costs": asdict(costs),
            "program": recorded_program(bench, key, entries, measured, sms, costs, device_name,
                                        choice, tau_of)}


def bench_row(bench: str, key: tuple, entries: Mapping[str, dict[str, Any]],
              modes: Mapping[str, dict[str, Any]], sms: int, device_name: str | None,
              rates: Mapping[str, float] | None = None) -> dict[str, Any]:
    """A bench row's `mode_choice`: `recorded_row_choice` with the device's costs, from the
    row's compile entries and measured modes (and the run's measured `rates`, which attention's
    tile work reads), and its `held_out_choice`; {"error": ...} where it cannot be made."""
    measured = _measured_modes(modes)
    costs = mode_cost.costs_for(device_name)
    try:
        entries = {m: e for m, e in entries.items() if m in measured and "error" not in e}
        shapes = mode_shapes(bench, key, entries)
        return {**recorded_row_choice(bench, key, shapes, entries, measured, sms, costs,
                                      device_name, rates),
                "held_out": held_out_choice(bench, key, shapes, modes, sms, costs, rates)}
    except Exception as exc:  # a row the model cannot read is reported, the bench goes on
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def table_line(row: dict[str, Any], indent: str) -> str | None:
    """The bench tables' line for a row's `mode_choice`."""
    choice = row.get("mode_choice")
    if not choice:
        return None
    if "error" in choice:
        return f"{indent}cost model: FAILED: {choice['error']}"
    return (f"{indent}cost model chose {choice['chosen']} ({choice['chosen_ms']:.4f} ms "
            f"measured); best {choice['best']} ({choice['best_ms']:.4f} ms): "
            f"{choice['within']:.3f} of the best in-sample; {held_out_text(choice)}; "
            f"why: {choice['reason']}")


def held_out_text(choice: dict[str, Any]) -> str:
    """A row choice's held-out check in words (records from before it: that they lack it)."""
    held = choice.get("held_out")
    if held is None:
        return "held out: not recorded"
    if "unavailable" in held:
        return f"held out: cannot be evaluated ({held['unavailable']})"
    return (f"held out (chosen on {held['chosen_on']}, measured on {held['measured_on']}): "
            f"chose {held['chosen']}, {held['within']:.3f} of the best ({held['best']})")


def program_name(bench: str, key: tuple) -> str:
    """A row's recorded program's file name: gpt3-M256.mlir, T512-C128.mlir (a batch, a
    causal mask and a KV cache named after them: T256-C768-B8-causal.mlir,
    T1-C1536-B4-S2048.mlir), N8-H56-C128.mlir."""
    if bench == "mlp":
        return f"{key[0]}-M{key[1]}.mlir"
    if bench == "attention":
        batch = f"-B{key[4]}" if len(key) >= 6 and key[4] > 1 else ""
        causal = "-causal" if len(key) >= 6 and key[5] else ""
        cache = f"-S{key[6]}" if len(key) == 7 else ""
        return "T{}-C{}{}{}{}.mlir".format(*key[:2], batch, causal, cache)
    return "N{}-H{}-C{}.mlir".format(*key)


def write_programs(result: dict[str, Any], out_dir, stem: str) -> Path | None:
    """Each row's recorded program (`bench_row`'s "program") as a file in
    <out_dir>/<stem>-<device>-programs/, for `tilesync explain`; the row keeps its path
    relative to out_dir instead of the text. The directory, None where no row has one."""
    from tilesync.bench.report import slug

    directory = Path(out_dir) / f"{stem}-{slug(result['device']['name'])}-programs"
    wrote = False
    for bench, key, row in _rows(result):
        choice = row.get("mode_choice") or {}
        if "program" not in choice:
            continue
        path = _write_program(directory, bench, key, choice["program"])
        choice["program"] = str(path.relative_to(out_dir))
        wrote = True
    return directory if wrote else None


def _write_program(directory: Path, bench: str, key: tuple, text: str) -> Path:
    path = directory / program_name(bench, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")
    return path


# --- fitting the mechanism costs -------------------------------------------------------------

_COST_FIELDS = tuple(field.name for field in fields(mode_cost.MechanismCosts))


def _linear_terms(bench: str, key: tuple, shapes: Mapping[str, mode_cost.ModeShape],
                  measured: Mapping[str, float], sms: int,
                  rates: Mapping[str, float] | None = None,
                  around: mode_cost.MechanismCosts | None = None
                  ) -> list[tuple[str, float, list[float], float]]:
    """(mode, measured, coefficients, constant) with predicted ≈ constant + coefficients ·
    costs: each mode's prediction linearized around the costs `around` (default zero), every
    cost's derivative taken by a small step."""
    around = around or mode_cost.MechanismCosts.zero()
    step = 1e-4

    def predicted(costs: mode_cost.MechanismCosts) -> dict[str, float]:
        return predictions(bench, key, shapes, measured, sms, costs, rates)

    at = predicted(around)
    slopes = []
    for field in _COST_FIELDS:
        moved = predicted(replace(around, **{field: getattr(around, field) + step}))
        slopes.append({m: (moved[m] - at[m]) / step for m in at})
    point = around.as_tuple()
    return [(mode, measured[mode], [s[mode] for s in slopes],
             at[mode] - sum(s[mode] * c for s, c in zip(slopes, point, strict=True)))
            for mode in at if mode in measured and mlp.baseline_mode(mode, measured) != mode]


def fit(rows: list[tuple[str, tuple, Mapping[str, mode_cost.ModeShape], Mapping[str, float],
                         int, Mapping[str, float] | None]],
        rounds: int = 2) -> mode_cost.MechanismCosts:
    """Non-negative least squares of the relative errors of every mode's prediction over
    `rows` (bench, key, shapes, measured, sms, the run's rates), linearized again around each
    round's fit."""
    import numpy as np
    from scipy.optimize import lsq_linear

    costs = None
    for _ in range(rounds):
        terms = [t for bench, key, shapes, measured, sms, rates in rows
                 for t in _linear_terms(bench, key, shapes, measured, sms, rates, costs)]
        a = np.array([[c / m for c in coefficients] for _, m, coefficients, _ in terms])
        b = np.array([(m - constant) / m for _, m, _, constant in terms])
        solution = lsq_linear(a, b, bounds=(0.0, np.inf))
        costs = mode_cost.MechanismCosts(*(float(x) for x in solution.x))
    assert costs is not None
    return costs


# --- rows of a bench result --------------------------------------------------------------------


def _bench_of(result: dict[str, Any]) -> str:
    first = result["rows"][0] if result["rows"] else {}
    return "mlp" if "model" in first else "attention" if "T" in first else "conv"


def _key(bench: str, row: dict[str, Any]) -> tuple:
    if bench == "mlp":
        return (row["model"], row["M"])
    if bench == "attention":  # one head as wide as x: (T, C), else (T, C, H, E[, B, causal])
        heads, model = row.get("H", 1), row.get("E", row["C"])
        if "B" in row:
            return (row["T"], row["C"], heads, model, row["B"], row["causal"])
        return (row["T"], row["C"]) if (heads, model) == (1, row["C"]) else \
            (row["T"], row["C"], heads, model)
    return (row["N"], row["H"], row["C"])


def _rows(result: dict[str, Any]) -> list[tuple[str, tuple, dict[str, Any]]]:
    bench = _bench_of(result)
    return [(bench, _key(bench, row), row) for row in result["rows"]]


def _entries_of(bench: str, key: tuple, modes: list[str], target: str
                ) -> dict[str, dict[str, Any]]:
    """The compile entries of a row's modes, from the bench's cache (compiled where missing)."""
    if bench == "mlp":
        jobs = [(*key, mode, False) for mode in modes]
        compiled = mlp.compile_jobs(jobs, target, cache=mlp.mlp_cache())
    elif bench == "attention":
        from tilesync.bench import attention

        jobs = [(key, mode, False) for mode in modes]
        compiled = attention.compile_jobs(jobs, target, cache=attention.attention_cache())
    else:
        from tilesync.bench import conv

        jobs = [(key, mode, False) for mode in modes]
        compiled = conv.compile_jobs(jobs, target, cache=conv.conv_cache())
    return {job[-2]: compiled[job] for job in jobs}


def _measured_modes(modes: Mapping[str, dict[str, Any]]) -> dict[str, float]:
    return {m: r["median_ms"] for m, r in modes.items() if "median_ms" in r}


def main(argv: list[str] | None = None) -> int:
    import json

    parser = argparse.ArgumentParser(prog="python -m tilesync.bench.mode_choice")
    parser.add_argument("results", nargs="+", help="bench mlp / conv / attention JSON results")
    parser.add_argument("--fit", action="store_true",
                        help="fit the mechanism costs to these results first")
    parser.add_argument("--programs", metavar="DIR",
                        help="write each row's program with the choice recorded on it here")
    args = parser.parse_args(argv)
    loaded = []
    entries_of = {}
    modes_of = {}
    for path in args.results:
        try:
            with open(path, encoding="utf-8") as f:
                result = json.load(f)
            rows = _rows(result)
            if rows and rows[0][0] == "attention" and not result.get("rates"):
                raise KeyError("rates (attention's tile work reads the run's measured rates)")
        except OSError as err:
            print(f"{path}: error: cannot read it: {err.strerror or err}", file=sys.stderr)
            return 1
        except (ValueError, KeyError, TypeError, IndexError) as err:
            print(f"{path}: not a bench mlp / conv / attention result: {type(err).__name__}: {err}",
                  file=sys.stderr)
            return 1
        for bench, key, row in rows:
            measured = _measured_modes(row["modes"])
            ours = [m for m in measured if not is_library(m)]
            entries = {m: e for m, e in _entries_of(bench, key, ours, "sm_90").items()
                       if "error" not in e}
            entries_of[(bench, key)] = entries, result["device"]["name"]
            modes_of[(bench, key)] = row["modes"]
            shapes = mode_shapes(bench, key, entries)
            loaded.append((bench, key, shapes, measured, result.get("sms", 132),
                           result.get("rates")))
    fitted = fit(loaded) if args.fit else None
    if fitted is not None:
        print("fitted:", fitted)
    in_sample: list[float] = []
    held_out: list[float] = []
    for bench, key, shapes, measured, sms, rates in loaded:
        entries, device_name = entries_of[(bench, key)]
        costs = fitted or mode_cost.costs_for(device_name)
        row = recorded_row_choice(bench, key, shapes, entries, measured, sms, costs,
                                  device_name, rates)
        held = held_out_choice(bench, key, shapes, modes_of[(bench, key)], sms, costs, rates)
        in_sample.append(row["within"])
        if "within" in held:
            held_out.append(held["within"])
        print(f"{bench} {key}: chose {row['chosen']} ({row['chosen_ms']:.4f} ms), best "
              f"{row['best']} ({row['best_ms']:.4f} ms): {row['within']:.3f} in-sample; "
              f"{held_out_text({'held_out': held})}")
        if args.programs:
            _write_program(Path(args.programs), bench, key, row["program"])
    print(f"worst in-sample: {max(in_sample, default=0.0):.3f} over {len(in_sample)} rows")
    if held_out:
        print(f"worst held out: {max(held_out):.3f}, median {statistics.median(held_out):.3f} "
              f"over {len(held_out)} rows")
    if len(held_out) < len(in_sample):
        print(f"{len(in_sample) - len(held_out)} rows cannot be evaluated held out (timed in "
              "one turn)")
    return 0


__all__ = ["baseline_tile_times", "bench_row", "fastest_library", "fit", "half_medians",
           "held_out_choice", "held_out_text", "is_library", "mode_shapes", "predictions",
           "program_name", "recorded_program", "recorded_row_choice", "row_choice",
           "stage_blocks_per_sm", "table_line", "tile_work", "turn_samples", "write_programs"]

if __name__ == "__main__":
    sys.exit(main())

