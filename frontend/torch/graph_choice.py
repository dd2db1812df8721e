"""The whole graph's last word: of the forms it can run in, the fastest measured.

    choose(forms, inputs, key, cache, measure=cost.measure_interleaved_ms,
           device_measure=cost.measure_graph_ms) -> GraphChoice

A piece that wins on its own can still lose as part of the graph: around a launch-bound model
the host's time decides (Inductor's wrapper, Dynamo's guards, one more Python op), and for a
small model torch.compile's default can itself be slower than eager. So in auto mode on a GPU
the graph runs in whichever of its forms, each also replayed from a CUDA graph (with_replays),
was fastest on the example inputs, each called as Dynamo calls a backend's result (unboxed)
and timed as a user's loop runs it (host and device together; the forms take turns, so that
a drifting clock favours none); a form with pieces of ours only where it beats torch's
fastest by cost.WIN_MARGIN. Where the host decides, forms tie: a form of ours within that
margin of torch's chosen one is then taken if the device runs it faster by the margin (each
captured in a CUDA graph and replayed, `device_tie_break`): called per step it costs the same
host time, and a user who replays the whole model from a CUDA graph of their own gets the
device's gain. The choice and the times are cached on disk per graph, input shapes, device and
torch version; a cached choice builds only the chosen form.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

EAGER, INDUCTOR = "eager", "inductor"
OURS = "tilesync"
OURS_EAGER, OURS_INDUCTOR = "tilesync + eager", "tilesync + inductor"
"""The forms: torch's graph as it is (eager) or through Inductor (torch.compile's default),
and the graph with our pieces, its rest eager or through Inductor (OURS: the traced module's
one form with pieces, tilesync.frontend.torch.compile's)."""
REPLAYED = " (cuda graph)"
"""A form's name with this appended: the form replayed from a CUDA graph (replay.py)."""


def is_ours(form: str) -> bool:
    """Whether the form runs pieces of ours."""
    return form.startswith(OURS)


def with_replays(forms: dict[str, Callable[[], Callable[..., Any]]], inputs: list[Any]
                 ) -> dict[str, Callable[[], Callable[..., Any]]]:
    """`forms`, then each of them replayed from a CUDA graph captured on `inputs`; a form
    built for both is built once."""
    from functools import cache

    from tilesync.frontend.torch.replay import GraphReplay

    once = {name: cache(build) for name, build in forms.items()}
    replays = {name + REPLAYED: lambda build=build: GraphReplay(build(), inputs)
               for name, build in once.items()}
    return {**once, **replays}


@dataclass
class GraphChoice:
    form: str
    function: Callable[..., Any]
    times: dict[str, float] = field(default_factory=dict)  # form -> measured median ms
    device_times: dict[str, float] = field(default_factory=dict)
    """Form (without REPLAYED) -> median ms replayed from a CUDA graph: the device's time,
    measured only where the host's times tie (device_tie_break)."""
    cached: bool = False
    stored: bool = False
    """Whether this measurement was cached for the next compile (ops.measurement_stands: not
    one made on a pipeline's fast tier that torch won)."""
    failed: dict[str, str] = field(default_factory=dict)  # form -> why it could not be built
    seconds: float = 0.0  # building (and, not cached, measuring) the forms

    def line(self) -> str:
        parts = [f"graph: {self.form}"]
        if self.times:
            parts.append("measured " + ", ".join(
                f"{name} {ms:.4f} ms" for name, ms in sorted(self.times.items(),
                                                             key=lambda item: item[1])))
        if self.device_times:
            parts.append("on the device " + ", ".join(
                f"{name} {ms:.4f} ms" for name, ms in sorted(self.device_times.items(),
                                                             key=lambda item: item[1])))
        parts += [f"{name} not built: {why}" for name, why in self.failed.items()]
        if self.cached:
            parts.append("cached")
        elif self.times and not self.stored:
            parts.append("not cached: measured again by the next compile")
        parts.append(f"in {self.seconds:.2f} s")
        return parts[0] + (" (" + "; ".join(parts[1:]) + ")" if parts[1:] else "")


def device_tie_break(form: str, times: dict[str, float],
                     device_ms: Callable[[str], float | None]) -> tuple[str, dict[str, float]]:
    """(the form to run, the device times measured) where the host's `times` chose torch's
    `form`: of our forms within cost.WIN_MARGIN of it (a tie: the host decides, and ours costs
    no more called per step), the one `device_ms` (a form's name without REPLAYED -> its
    median replayed from a CUDA graph, None where it cannot be captured) finds fastest, taken
    only where it beats `form`'s device time by the margin; else `form`. A form and its replay
    run the same work on the device: each is measured once."""
    from tilesync.frontend.torch.cost import WIN_MARGIN

    tied = [name for name in times if is_ours(name) and times[name] * WIN_MARGIN <= times[form]]
    if not tied:
        return form, {}
    device: dict[str, float | None] = {}

    def on_device(name: str) -> float | None:
        base = name.removesuffix(REPLAYED)
        if base not in device:
            device[base] = device_ms(base)
        return device[base]

    ours = [(ms, times[name], name) for name in tied if (ms := on_device(name)) is not None]
    theirs = on_device(form)
    measured = {name: ms for name, ms in device.items() if ms is not None}
    if not ours or theirs is None:
        return form, measured
    ms, _, fastest = min(ours)
    return (fastest if ms < WIN_MARGIN * theirs else form), measured


def choose(forms: dict[str, Callable[[], Callable[..., Any]]], inputs: list[Any], key: str,
           cache: Any, measure: Callable[..., list[float]] | None = None,
           host_delay_s: float = 0.0,
           device_measure: Callable[[Callable[[], Any]], float] | None = None) -> GraphChoice:
    """The fastest of `forms` (name -> a function that builds the form's callable) on `inputs`,
    each measured behind `host_delay_s` of the caller's own host time (cost.DYNAMO_CALL_S
    through Dynamo), ties between torch's and ours broken by `device_measure` (a call's median
    ms captured and replayed; cost.measure_graph_ms); `cache` (a CompileCache) keeps the
    choice under `key`. A form that fails to build or to run is left out (and said so); where
    none runs, the first one's error is raised."""
    if measure is None:
        from functools import partial

        from tilesync.frontend.torch.cost import measure_interleaved_ms

        measure = partial(measure_interleaved_ms, host_delay_s=host_delay_s)
    start = time.perf_counter()
    key = repr((key, host_delay_s))
    found, stored = cache.load(key)
    if found and stored["form"] in forms:
        try:
            return GraphChoice(stored["form"], forms[stored["form"]](), stored["times"],
                               stored.get("device_times", {}), cached=True,
                               seconds=time.perf_counter() - start)
        except Exception:  # a form that built before and no longer does: measure afresh
            pass
    from tilesync.frontend.torch.ops import measurement_stands, on_the_fast_tier

    fast = on_the_fast_tier()
    built: dict[str, Callable[..., Any]] = {}
    failed: dict[str, str] = {}
    for name, build in forms.items():
        try:
            function = build()
            function(*inputs)  # compiles lazily where it does; a failure leaves it out
            built[name] = function
        except Exception as err:
            failed[name] = f"{type(err).__name__}: {err}".splitlines()[0][:200]
    if not built:
        name = next(iter(forms))
        raise RuntimeError(f"no form of the graph runs ({name}: {failed[name]})")
    names = list(built)
    times = dict(zip(names, measure([lambda f=built[n]: f(*inputs) for n in names]),
                     strict=True))
    form = min(names, key=times.__getitem__)
    torchs = [n for n in names if not is_ours(n)]
    if is_ours(form) and torchs:  # ours only by a margin over torch's fastest form
        from tilesync.frontend.torch.cost import WIN_MARGIN

        fastest_torch = min(torchs, key=times.__getitem__)
        if times[form] >= WIN_MARGIN * times[fastest_torch]:
            form = fastest_torch
    device_times: dict[str, float] = {}
    if not is_ours(form):
        if device_measure is None:
            from tilesync.frontend.torch.cost import measure_graph_ms as device_measure

        def device_ms(name: str) -> float | None:
            if name not in built:
                return None
            try:  # under a capture a replayed form runs its function (replay.GraphReplay)
                return device_measure(lambda f=built[name]: f(*inputs))
            except Exception:  # a form that cannot be captured breaks no tie
                return None

        form, device_times = device_tie_break(form, times, device_ms)
    stored = not failed and measurement_stands(fast, is_ours(form))
    if stored:
        cache.store(key, {"form": form, "times": times, "device_times": device_times})
    return GraphChoice(form, built[form], times, device_times, stored=stored, failed=failed,
                       seconds=time.perf_counter() - start)


__all__ = ["EAGER", "INDUCTOR", "OURS", "OURS_EAGER", "OURS_INDUCTOR", "REPLAYED", "GraphChoice",
           "choose", "device_tie_break", "is_ours", "with_replays"]
