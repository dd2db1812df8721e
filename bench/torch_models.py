"""`tilesync bench torch`: the example models (examples/torch_models.py) as a user runs them:
eager PyTorch, eager replayed from a CUDA graph (the library without launch overheads),
`torch.compile` (Inductor, the default), `torch.compile(backend="tilesync")` (auto: each piece
ours only where measured faster, the whole graph in its fastest measured form, ours or torch's;
the entry point's function itself, so an uninstalled checkout runs it too), that replayed
from a CUDA graph, and the pieces forced through tilesync.

    torch_benchmarks(names=NAMES, warmup=5, reps=30, rows=None) -> dict   rows: a sweep, each
        model on inputs of each row count (`tilesync bench torch --rows 16 256 4096`)
    torch_table(result) -> str
    torch_plot(result, out_dir, name) -> PNG path

Each compiled model's output is checked against eager (relative error < 2e-2, every element
finite) on its first call, again once every piece runs its full kernels (finish_compiles: the
first call of a pipeline may run its fast tier's) and again after the timed turns, the last two
on a call whose output no earlier call left (`_checked_call`: a CUDA graph's static output is
poisoned before its replay). Timing: CUDA events around each call of the whole model, a model's
modes in turns (TURN calls a turn), median and p10/p90; the "vs eager", "vs graph" and "vs
compile" columns are eager's (its graph's, torch.compile's) median over the mode's. Each
model's floor: its FLOPs (torch's FlopCounterMode) at the run's peak rate, or its parameters,
inputs and output once at its copy bandwidth, the highest rates measured in the run
(report.settle_floors).
"""

from __future__ import annotations

import time
from typing import Any

from tilesync.bench.report import check_floors, floor_rates_text, settle_floors

NAMES = ("llama_mlp", "llama65b_mlp_tp8", "gpt2_block", "gpt2_attention", "gpt2_sdpa_attention",
         "gpt2_decode", "nerf_mlp", "nerf_mlp_rays", "resnet_block", "edge_mlp")
MODES = ("eager", "eager graph", "torch.compile", "tilesync", "tilesync graph",
         "tilesync (forced)")
TOL = 2e-2


TURN = 10
"""The modes of a model take turns, TURN calls each (reps / TURN turns, cost.sample_ms): timed
one after the other, a mode timed while the host or the GPU's clock drifted paid for it alone
(the same Inductor form measured 2.6% apart as torch.compile's and as ours), and with few
turns a state that lasts a turn still moves a median (0.196 and 0.213 ms in one run)."""


def _turns(reps: int) -> tuple[int, int]:
    """(turns, calls a turn) for `reps` calls of each mode."""
    return max(1, reps // TURN), min(reps, TURN)


def _timed_in_turns(fns: dict[str, Any], warmup: int, reps: int) -> dict[str, dict[str, float]]:
    from tilesync.frontend.torch.cost import sample_ms

    names = list(fns)
    rounds, block = _turns(reps)
    samples = sample_ms([fns[n] for n in names], warmup, rounds=rounds, block=block)
    timed = {}
    for name, ms in zip(names, samples, strict=True):
        ms = sorted(ms)
        timed[name] = {"median_ms": ms[len(ms) // 2], "p10_ms": ms[len(ms) // 10],
                       "p90_ms": ms[(9 * len(ms)) // 10]}
    return timed


def _graphed(fn, inputs):
    """`fn` on `inputs` captured in a CUDA graph as a user's code captures it (a pipeline still
    on its fast tier waits for its full kernels: this graph is replayed for good): a function
    that replays it and returns the captured output."""
    from tilesync.frontend.torch.cost import capture_graph

    graph, out = capture_graph(lambda: fn(*inputs), ours=False)

    def replay():
        graph.replay()
        return out

    return replay


def _floor_work(model, inputs) -> dict[str, int]:
    """The model's FLOPs (torch's FlopCounterMode) and the bytes of its parameters, inputs and
    output: what its floor takes."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        out = model(*inputs)
    tensors = [*model.parameters(), *inputs, out]
    return {"flops": counter.get_total_flops(),
            "floor_bytes": sum(t.numel() * t.element_size() for t in tensors)}


def _checked_call(fn, inputs, check) -> float:
    """check() of what one call of `fn` wrote: the output of a call before it poisoned (NaN)
    first, so that a form returning one static tensor (a CUDA graph's replay) cannot pass on
    what an earlier call left there; a form returning a new tensor is checked on that."""
    import torch

    earlier = fn(*inputs)
    with torch.inference_mode(earlier.is_inference()):  # where an inference tensor is writable
        earlier.fill_(float("nan"))
    return check(fn(*inputs))


def _check_again(row: dict[str, Any], made: dict[str, Any], inputs, check, when: str) -> None:
    """Every form of `made` checked again (`_checked_call`), its record's rel_error the worst
    yet; a form failing is taken out of `made` and recorded as failed `when`."""
    for mode, fn in list(made.items()):
        try:
            error = _checked_call(fn, inputs, check)
        except Exception as exc:
            row["modes"][mode] = {"error": f"{when}: {type(exc).__name__}: {exc}"[:500]}
            del made[mode]
            continue
        record = row["modes"][mode]
        record["rel_error"] = max(record["rel_error"], error)


def _run_model(torch, name: str, warmup: int, reps: int,
               rates: dict[str, float] | None = None, rows: int | None = None) -> dict[str, Any]:
    import tilesync.frontend.torch as tt
    from tilesync.examples.torch_models import example
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    model, inputs = example(name, "cuda", rows=rows)
    label = name if rows is None else f"{name}@{rows}"
    row: dict[str, Any] = {"model": label, "inputs": [list(t.shape) for t in inputs],
                           "dtype": str(inputs[0].dtype), "modes": {}}
    with torch.no_grad():
        ref = model(*inputs).float()
        if rates is not None:
            from tilesync.bench.report import floor_ms

            row.update(_floor_work(model, inputs))
            row["floor_ms"] = floor_ms(row["flops"], row["floor_bytes"], rates)

        def check(out) -> float:
            if not torch.isfinite(out).all():
                raise AssertionError("non-finite output")
            error = float((out.float() - ref).norm() / ref.norm())
            if error > TOL:
                raise AssertionError(f"relative error {error:.2e} > {TOL}")
            return error

        def compiled(backend, **kw):
            torch._dynamo.reset()
            start = time.perf_counter()
            fn = torch.compile(model, backend=backend, **kw)
            error = check(fn(*inputs))
            return fn, error, time.perf_counter() - start

        def graphed(fn):
            replay = _graphed(fn, inputs)
            return lambda *_: replay(), check(replay()), 0.0

        made: dict[str, Any] = {}
        candidates = {"eager": lambda: (model, 0.0, 0.0),
                      "eager graph": lambda: graphed(model),
                      "torch.compile": lambda: compiled("inductor"),
                      "tilesync": lambda: compiled(tilesync_backend),
                      "tilesync graph": lambda: graphed(made["tilesync"])}
        for mode, make in candidates.items():
            try:
                first = len(LAST_REPORTS)
                fn, error, seconds = make()
                made[mode] = fn
                record = {"rel_error": error, "compile_seconds": seconds}
                if mode == "tilesync":
                    reports = LAST_REPORTS[first:]
                    record["pieces"] = [p.line() for r in reports for p in r.pieces] + \
                        [r.graph.line() for r in reports if r.graph is not None]
                    # of compile_seconds: ours (pieces), then building/choosing the form
                    record["transform_seconds"] = sum(r.seconds for r in reports)
                    record["form_seconds"] = sum(r.graph.seconds for r in reports
                                                 if r.graph is not None)
                row["modes"][mode] = record
            except Exception as exc:
                row["modes"][mode] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        try:
            forced = tt.compile(model, inputs, mode="tilesync")
            if any(p.choice == "tilesync" for p in forced.report.pieces):
                error = check(forced(*inputs))
                made["tilesync (forced)"] = forced
                row["modes"]["tilesync (forced)"] = {
                    "rel_error": error, "pieces": [p.line() for p in forced.report.pieces]}
        except Exception as exc:
            row["modes"]["tilesync (forced)"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        # each compiled form called once more first: a later torch.compile's dynamo.reset
        # dropped the earlier ones' code, which they build again on that call, not timed
        for fn in made.values():
            fn(*inputs)
        tt.finish_compiles()  # time the fully compiled kernels, not the fast tier's
        _check_again(row, made, inputs, check, "with the full kernels")
        timed = _timed_in_turns({mode: lambda fn=fn: fn(*inputs) for mode, fn in made.items()},
                                warmup, reps)
        for mode, times in timed.items():
            row["modes"][mode].update(times)
        _check_again(row, made, inputs, check, "after the timed turns")
    return row


def _row_label(row: dict[str, Any]) -> str:
    return row["model"]


def torch_benchmarks(names=NAMES, warmup: int = 5, reps: int = 30,
                     rows: list[int] | None = None) -> dict[str, Any]:
    import torch

    from tilesync.examples.torch_models import input_shapes

    for name in names:  # a model the sweep cannot take: said before anything runs
        for count in rows or [None]:
            input_shapes(name, count)
    if not torch.cuda.is_available():
        raise RuntimeError("the torch benchmark needs torch on a GPU")
    started = time.perf_counter()
    from tilesync.bench.mlp import measured_rates

    rates = measured_rates(torch, warmup, reps)
    result: dict[str, Any] = {"experiment": "torch", "warmup": warmup, "reps": reps,
                              "rounds": _turns(reps)[0],
                              "library": f"torch {torch.__version__}", "rates": rates,
                              "rows": []}
    for name in names:
        for count in rows or [None]:
            result["rows"].append(_run_model(torch, name, warmup, reps, rates, count))
    settle_floors(result, _row_label)
    check_floors(result, _row_label)
    result["seconds"] = time.perf_counter() - started
    return result


def torch_table(result: dict[str, Any]) -> str:
    check_floors(result, _row_label)
    lines = [f"example models with {result['library']}; {result['reps']} reps in "
             f"{result.get('rounds', 1)} turns, {result['warmup']} warm-up a turn; "
             "whole-model time per call",
             f"{'model':<13} {'mode':<18} {'median ms':>10} {'p10-p90':>17} {'vs eager':>8} "
             f"{'vs graph':>8} {'vs compile':>10} {'rel err':>8}"]
    if result.get("rates") and any("floor_ms" in row for row in result["rows"]):
        peak, copy = floor_rates_text(result, "cuBLAS probe")
        lines.insert(1, f"floor = the longer of the FLOPs at {peak} and the parameters, inputs "
                        f"and output at {copy}")
    for row in result["rows"]:
        modes = row["modes"]
        eager = modes.get("eager", {}).get("median_ms")
        graph = modes.get("eager graph", {}).get("median_ms")
        default = modes.get("torch.compile", {}).get("median_ms")
        for mode, r in modes.items():
            if "error" in r:
                lines.append(f"{row['model']:<13} {mode:<18} FAILED: {r['error']}")
                continue
            m = r["median_ms"]
            vs_eager = f"{eager / m:>8.3f}" if eager else f"{'-':>8}"
            vs_graph = f"{graph / m:>8.3f}" if graph else f"{'-':>8}"
            vs_default = f"{default / m:>10.3f}" if default else f"{'-':>10}"
            lines.append(f"{row['model']:<13} {mode:<18} {m:>10.4f} "
                         f"{r['p10_ms']:.4f}-{r['p90_ms']:.4f} {vs_eager} {vs_graph} "
                         f"{vs_default} {r['rel_error']:>8.1e}")
            lines += [f"{'':<13}   {line}" for line in r.get("pieces", [])]
        if "floor_ms" in row:
            lines.append(f"{row['model']:<13} {'floor':<18} {row['floor_ms']:>10.4f}")
    lines.append(f"total {result['seconds']:.0f} s")
    return "\n".join(lines)


def torch_plot(result: dict[str, Any], out_dir, name: str):
    """Each mode's speedup over eager in a CUDA graph, per model (p10-p90 as error bars)."""
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tilesync.bench.report import speedup_bars

    rows = result["rows"]
    modes = [m for m in MODES if m != "eager graph"]

    def speed(row, mode):
        base, r = row["modes"].get("eager graph", {}), row["modes"].get(mode, {})
        if "median_ms" not in base or "median_ms" not in r:
            return None
        return base["median_ms"] / r["median_ms"], r

    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows)), 4))
    speedup_bars(ax, rows, modes, speed)
    ax.set_xticks(range(len(rows)), [row["model"] for row in rows], rotation=15)
    ax.set_ylabel("speedup over eager in a CUDA graph")
    device = result.get("device", {})
    device = device.get("name", "") if isinstance(device, dict) else device
    ax.set_title(f"example models, {result['library']}, {device}")
    ax.legend(fontsize=7)
    path = Path(out_dir) / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


__all__ = ["NAMES", "torch_benchmarks", "torch_plot", "torch_table"]
