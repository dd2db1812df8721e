"""The whole graph's last word: of the forms it can run in, the fastest measured.

    choose(forms, inputs, key, cache, measure=cost.measure_interleaved_ms) -> GraphChoice

A piece that wins on its own can still lose as part of the graph: around a launch-bound model
the host's time decides (Inductor's wrapper, Dynamo's guards, one more Python op), and for a
small model torch.compile's default can itself be slower than eager. So in auto mode on a GPU
the graph runs in whichever of its forms, each also replayed from a CUDA graph (with_replays),
was fastest on the example inputs, each called as Dynamo calls a backend's result (unboxed)
and timed as a user's loop runs it (host and device together; the forms take turns, so that
a drifting clock favours none); a form with pieces of ours only where it beats torch's
fastest by cost.WIN_MARGIN. The choice and the times are cached on disk per graph, input
shapes, device and torch version; a cached choice builds only the chosen form.
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
    cached: bool = False
    failed: dict[str, str] = field(default_factory=dict)  # form -> why it could not be built
    seconds: float = 0.0  # building (and, not cached, measuring) the forms

    def line(self) -> str:
        parts = [f"graph: {self.form}"]
        if self.times:
            parts.append("measured " + ", ".join(
                f"{name} {ms:.4f} ms" for name, ms in sorted(self.times.items(),
                                                             key=lambda item: item[1])))
        parts += [f"{name} not built: {why}" for name, why in self.failed.items()]
        if self.cached:
            parts.append("cached")
        parts.append(f"in {self.seconds:.2f} s")
        return parts[0] + (" (" + "; ".join(parts[1:]) + ")" if parts[1:] else "")


def choose(forms: dict[str, Callable[[], Callable[..., Any]]], inputs: list[Any], key: str,
           cache: Any, measure: Callable[..., list[float]] | None = None,
           host_delay_s: float = 0.0) -> GraphChoice:
    """The fastest of `forms` (name -> a function that builds the form's callable) on `inputs`,
    each measured behind `host_delay_s` of the caller's own host time (cost.DYNAMO_CALL_S
    through Dynamo); `cache` (a CompileCache) keeps the choice under `key`. A form that fails
    to build or to run is left out (and said so); where none runs, the first one's error is
    raised."""
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
                               cached=True, seconds=time.perf_counter() - start)
        except Exception:  # a form that built before and no longer does: measure afresh
            pass
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
    if not failed:
        cache.store(key, {"form": form, "times": times})
    return GraphChoice(form, built[form], times, failed=failed,
                       seconds=time.perf_counter() - start)


__all__ = ["EAGER", "INDUCTOR", "OURS", "OURS_EAGER", "OURS_INDUCTOR", "REPLAYED", "GraphChoice",
           "choose", "is_ours", "with_replays"]
