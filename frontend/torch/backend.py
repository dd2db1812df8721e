"""The `torch.compile` backend: `torch.compile(model, backend="tilesync")`.

Registered through the `torch_dynamo_backends` entry point (pyproject.toml). Dynamo hands over
each captured graph; its pieces go through compiler.transform, and the rest runs as torch
would run it: on a GPU through Inductor (what `torch.compile` does by default) or as captured,
whichever ran the example inputs faster; the graph itself on the CPU. Nothing raises out of
the backend: a failure of tilesync leaves the graph to torch and the reason in the log.
"""

from __future__ import annotations

import sys
from typing import Any

from tilesync.frontend.torch.compiler import Options, transform

LAST_REPORTS: list[Any] = []
"""The reports of the graphs compiled by this process, newest last (for explain and tests)."""


CHOICE_REPS = 20  # timed calls of each way to run a graph (after as many warm-up calls)


def _caller(fn: Any, inputs: list[Any]) -> Any:
    """A no-argument call of a compiled graph: Inductor's functions may take their inputs
    boxed (one list, which they may empty), Dynamo's graphs as arguments."""
    if getattr(fn, "_boxed_call", False):
        return lambda: fn(list(inputs))
    return lambda: fn(*inputs)


def median_call_ms(call: Any, reps: int = CHOICE_REPS) -> float:
    """The median time of `call` on the current CUDA stream, as a user's loop sees it: events
    around each call, no synchronization between calls (host-bound calls count their host
    time)."""
    import torch

    for _ in range(reps):
        call()
    pairs = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in pairs)
    return times[len(times) // 2]


def faster_of(candidates: dict[str, Any], inputs: list[Any], timer=median_call_ms
              ) -> tuple[str, dict[str, float]]:
    """The name of the fastest compiled graph among `candidates` on `inputs`, and every time.
    A candidate that fails to run is left out; the first one is kept if all fail."""
    times: dict[str, float] = {}
    for name, fn in candidates.items():
        try:
            times[name] = timer(_caller(fn, inputs))
        except Exception as err:  # a candidate torch cannot run here is simply not chosen
            print(f"tilesync: {name} could not run the graph: {type(err).__name__}: {err}",
                  file=sys.stderr)
    if not times:
        return next(iter(candidates)), times
    return min(times, key=times.__getitem__), times


def tilesync_backend(gm: Any, example_inputs: list[Any], **options: Any) -> Any:
    """`inner`: how the graph (with tilesync's pieces in it) runs: "inductor", "eager" (the
    graph module itself) or "auto" (on a GPU, the faster of the two measured on the example
    inputs: Inductor's Python wrapper costs more than it saves on small, host-bound graphs;
    on the CPU, the graph itself)."""
    import torch

    inner = options.pop("inner", "auto")
    report = None
    try:
        gm, report = transform(gm, list(example_inputs), Options.make(**options))
        LAST_REPORTS.append(report)
    except Exception as err:  # never a traceback from inside tilesync: torch keeps the graph
        print(f"tilesync: the graph stays with torch: {type(err).__name__}: {err}",
              file=sys.stderr)
    on_gpu = any(isinstance(t, torch.Tensor) and t.is_cuda for t in example_inputs)
    if inner == "eager" or (inner == "auto" and not on_gpu):
        return gm.forward
    from torch._inductor.compile_fx import compile_fx

    inductor = compile_fx(gm, example_inputs)
    if inner == "inductor":
        return inductor
    chosen, times = faster_of({"inductor": inductor, "eager": gm.forward}, list(example_inputs))
    if report is not None:
        report.notes.append("the graph runs " + ("through Inductor" if chosen == "inductor"
                                                 else "as captured (no Inductor)") + ": " +
                            ", ".join(f"{name} {ms:.4f} ms" for name, ms in times.items()))
    return inductor if chosen == "inductor" else gm.forward


__all__ = ["LAST_REPORTS", "faster_of", "median_call_ms", "tilesync_backend"]
