"""What the benches of a chain of stage programs share (bench/conv.py, bench/attention.py): a
mode run once its stages are proved, the modes of a shape and the library's paths timed in
turns (a CUDA error ends the GPU work), a table line, a plot against the library and the
cache's precompile. bench/mlp.py holds the runtime side they build on (compiling, TimedForm,
time_forms, torch_forms, the measured rates)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from tilesync.bench import mlp


def start_run(experiment: str, jobs: list[tuple], compile_jobs: Callable[..., Any],
              cache: Any, target: str, processes: int | None, sms: int, warmup: int,
              reps: int, modes: Collection[str], verify_sms: int,
              library: Callable[[Any], str] = lambda torch: f"torch {torch.__version__}"
              ) -> tuple[Any, dict[tuple, dict[str, Any]], dict[str, Any]]:
    """(torch, the compiled jobs, the result's header): every job compiled first (a process
    pool, or `cache`), before torch starts its threads; then the measured peak rate and copy
    bandwidth (mlp.measured_rates). `library(torch)` names the library timed against."""
    t0 = time.perf_counter()
    compiled = compile_jobs(jobs, target, processes, cache)
    compile_seconds = time.perf_counter() - t0
    cached = cache.hits if cache else 0
    torch, why = mlp._torch_or_none()
    if torch is None:
        raise RuntimeError(f"the {experiment} benchmark needs torch on the GPU: {why}")
    result: dict[str, Any] = {
        "experiment": experiment, "warmup": warmup, "reps": reps, "tolerance": mlp.TOL,
        "modes": list(modes), "library": library(torch), "sms": sms,
        "compile_seconds": compile_seconds,
        "programs_compiled": sum("error" not in e for e in compiled.values()) - cached,
        "programs_cached": cached, "verify": f"sync-verify{{sms={verify_sms}}}: proved",
        "timeout_ns": mlp.TIMEOUT_NS, "rates": mlp.measured_rates(torch, warmup, reps),
        "rows": [],
    }
    return torch, compiled, result


def for_mode(module: Any, mode: str) -> Any:
    """A chain's stage program as `mode` launches it before its passes: stream_sync (and a
    family's, tma:stream_sync) on one stream without PDL (mlp.launch_on_one_stream), the
    others as built."""
    if mode.removeprefix(mlp.mode_family(mode)) == "stream_sync":
        mlp.launch_on_one_stream(module)
    return module


def compile_mode(job: tuple, target: str, module: Any, passes: list[str],
                 kernels_target: str | None) -> dict[str, Any]:
    """A (shape, mode, debug) job's compile entry (mlp.compile_stage_program of `module` after
    `passes`), for `kernels_target` where the kernels need more than the device's plain
    target (wgmma: sm_90a where the device is sm_90)."""
    start = time.perf_counter()
    if kernels_target is not None and target == "sm_90":
        target = kernels_target
    entry = mlp.compile_stage_program(module, passes, target, job[2])
    return {"job": job, **entry, "compile_seconds": time.perf_counter() - start}


def verdicts(host: str) -> dict[str, str]:
    """sync-verify's verdict per stage of a compiled host plan."""
    from tilesync.api import parse
    from tilesync.contract import VERIFIED_ATTR
    from tilesync.dialects import sync

    return {op.sym_name.data: op.attributes[VERIFIED_ATTR].data  # type: ignore[attr-defined]
            for op in parse(host).ops if isinstance(op, sync.StageOp)
            and VERIFIED_ATTR in op.attributes}


def proved_form(entry: dict[str, Any], data: Any, kernel_args: dict[str, list], name: str,
                stages: Collection[str]) -> tuple[Any, Callable[[dict[str, Any]], None]]:
    """One mode, every stage of `stages` proved by sync-verify (none: a program without
    dependencies, which stream order synchronizes), loaded: its mlp.TimedForm (poisoned
    outputs, each run an epoch, checked) and what completes its record once timed."""
    found = verdicts(entry["host"])
    if set(found) != set(stages) or any(v != "proved" for v in found.values()):
        raise AssertionError(f"{name}: sync-verify did not prove every stage: {found}")
    program = mlp.load_program(entry)

    def finish(record: dict[str, Any]) -> None:
        record.update(policy=mlp._policy_of(entry["host"]),
                      verified="proved" if stages else "stream order", epochs=program.epoch)

    return mlp.program_form(program, kernel_args, data, name), finish


def time_modes(row: dict[str, Any], modes: list[str], entries: Mapping[str, dict[str, Any]],
               prepare: Callable[[dict[str, Any], str], tuple[Any, Callable]], label: str,
               data: Any = None, warmup: int = 5, reps: int = 30,
               libraries: Mapping[str, Callable[[], Any]] | None = None) -> str | None:
    """Each mode (`prepare(entry, name)`: its form and what completes its record) and each
    library path eager and replayed from a CUDA graph (mlp.torch_forms, recorded as
    <prefix>_eager and <prefix>_graph) timed in turns (mlp.time_forms) into row["modes"], a
    failure as its error; after a CUDA error (the context is lost) the reason the later GPU work
    is skipped."""
    from tilesync.runtime.errors import TilesyncRuntimeError

    forms: dict[str, Any] = {}
    finishers: dict[str, Callable] = {}
    records: dict[str, dict[str, Any]] = {}
    try:
        for mode in modes:
            entry = entries[mode]
            if "error" in entry:
                records[mode] = {"error": entry["error"][:2000]}
                continue
            try:
                forms[mode], finishers[mode] = prepare(entry, f"{label} {mode}")
            except Exception as exc:  # not proved, not loaded: report, go on
                if mlp._context_lost(exc, TilesyncRuntimeError):
                    raise
                records[mode] = {"error": f"{type(exc).__name__}: {exc}"}
        for prefix, library in (libraries or {}).items():
            try:
                made, failed = mlp.torch_forms(data, library, f" ({prefix})")
            except Exception as exc:
                if mlp._context_lost(exc, TilesyncRuntimeError):
                    raise
                made, failed = {}, {"torch_eager": {"error": f"{type(exc).__name__}: {exc}"}}
            forms.update({name.replace("torch", prefix, 1): f for name, f in made.items()})
            records.update({name.replace("torch", prefix, 1): r for name, r in failed.items()})
        timed = mlp.time_forms(forms, warmup, reps)
    except Exception as exc:
        if not mlp._context_lost(exc, TilesyncRuntimeError):
            raise
        row["modes"].update(records)
        return f"skipped after a CUDA error in {label}: {exc}"
    for name, record in timed.items():
        if name in finishers and "median_ms" in record:
            finishers[name](record)
        records[name] = record
    row["modes"].update({name: records[name] for name in [*modes, *records] if name in records})
    return None


def library_ms(row: dict[str, Any], mode: str = "torch_graph") -> float | None:
    return row["modes"].get(mode, {}).get("median_ms")


def mode_lines(row: dict[str, Any], indent: int, references: list[str]) -> list[str]:
    """A table line per mode of the row: median, p10-p90, speedup over stream sync, each of
    `references`' median over the mode's, /floor, relative error and the policy."""
    lines = []
    against = [library_ms(row, ref) for ref in references]
    for mode, r in row["modes"].items():
        if "error" in r:
            lines.append(f"{'':<{indent}} {mode:<18} FAILED: {r['error']}")
            continue
        med = r["median_ms"]
        sp = row["speedup"].get(mode)
        spread = f"{r['p10_ms']:.4f}-{r['p90_ms']:.4f}"
        lines.append(
            f"{'':<{indent}} {mode:<18} {med:>10.4f} {spread:>17} "
            + (f"{sp:>8.3f} " if sp else f"{'-':>8} ")
            + "".join(f"{ms / med:>8.3f} " if ms else f"{'-':>8} " for ms in against)
            + f"{med / row['floor_ms']:>7.2f} {row['flops'] / (med * 1e-3) / 1e12:>8.1f} "
            f"{r['rel_error']:>8.1e}" + (f"  {r['policy']}" if "policy" in r else ""))
    return lines


def library_plot(result: dict[str, Any], out_dir, name: str, modes: list[str],
                 label: Callable[[dict[str, Any]], str], ylabel: str, title: str):
    """A PNG: per row, each mode's speedup over the library replayed from a CUDA graph
    (torch_graph; p10-p90 of the mode as error bars); None where matplotlib is missing."""
    from tilesync.bench.report import pyplot, save_figure, speedup_bars

    plt = pyplot()
    if plt is None:
        return None
    rows = [r for r in result.get("rows", []) if library_ms(r)]
    modes = [m for m in modes if any("median_ms" in r["modes"].get(m, {}) for r in rows)]
    if not rows or not modes:
        return None
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 1.2), 4.2))

    def vs_graph(row, mode):
        rec = row["modes"].get(mode, {})
        return (library_ms(row) / rec["median_ms"], rec) if "median_ms" in rec else None

    speedup_bars(ax, rows, modes, vs_graph)
    ax.set_xticks(range(len(rows)), [label(r) for r in rows], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title} on {result['device']['name']}")
    ax.legend(fontsize=7, ncol=2)
    return save_figure(plt, fig, result, out_dir, name)


def precompile(jobs: list[tuple], compile_jobs: Callable[..., dict[tuple, dict[str, Any]]],
               cache: Any, target: str = "sm_90", processes: int | None = None
               ) -> dict[str, Any]:
    """Compile `jobs` into `cache` without a GPU; what failed and how long it took."""
    t0 = time.perf_counter()
    out = compile_jobs(jobs, target, processes, cache)
    failed = {job: e["error"] for job, e in out.items() if "error" in e}
    return {"programs": len(out), "compiled": len(out) - cache.hits, "failed": failed,
            "seconds": time.perf_counter() - t0}


def precompile_main(prog: str, precompile_all: Callable[..., dict[str, Any]],
                    gpu_test_shapes: tuple, argv=None) -> int:
    """`python -m <prog> --precompile`: the bench's programs and its GPU test's (debug)."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--precompile", action="store_true", required=True)
    parser.parse_args(argv)
    print(precompile_all())
    print(precompile_all(gpu_test_shapes, debug=True))
    return 0


__all__ = [
    "compile_mode",
    "for_mode",
    "library_ms",
    "library_plot",
    "mode_lines",
    "precompile",
    "precompile_main",
    "proved_form",
    "start_run",
    "time_modes",
    "verdicts",
]
