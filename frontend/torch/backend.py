"""The `torch.compile` backend: `torch.compile(model, backend="tilesync")`.

Registered through the `torch_dynamo_backends` entry point (pyproject.toml). Dynamo hands over
each captured graph; its pieces go through compiler.transform. In auto mode on a GPU the graph
then runs in the form measured fastest (graph_choice): torch's graph eager or through Inductor
(what `torch.compile` does by default), or with our pieces, the rest eager or through
Inductor, each also replayed from a CUDA graph, measured behind Dynamo's own host time
(cost.DYNAMO_CALL_S); so a graph is never left slower than torch's own ways of running it.
Otherwise the rest runs through Inductor on a GPU, as the graph itself on the CPU (`inner` =
"inductor" or "eager" fixes it). Nothing raises out of the backend: a failure of tilesync
leaves the graph to torch and the reason in the log.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from tilesync.api import gc_paused
from tilesync.frontend.torch import graph_choice
from tilesync.frontend.torch.compiler import (
    Options,
    Report,
    UnsupportedError,
    graph_key,
    transform,
)
from tilesync.frontend.torch.cost import DYNAMO_CALL_S

LAST_REPORTS: list[Any] = []
"""The reports of the graphs compiled by this process, newest last (for explain and tests)."""
INNERS = ("auto", "inductor", "eager")


def _inductor(gm: Any, example_inputs: list[Any]) -> Any:
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)


def _forms(original: Any, rewritten: Any, report: Report, inputs: list[Any]) -> dict[str, Any]:
    forms = {graph_choice.INDUCTOR: lambda: _inductor(original, inputs),
             graph_choice.EAGER: lambda: original.forward}
    if report.ours:
        forms = {graph_choice.OURS_INDUCTOR: lambda: _inductor(rewritten, inputs),
                 graph_choice.OURS_EAGER: lambda: rewritten.forward, **forms}
    return graph_choice.with_replays(forms, inputs)


TORCH_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""torch.compile's own `mode` names, which it hands a backend too: not tilesync's modes."""


def backend_options(options: dict[str, Any]) -> dict[str, Any]:
    """tilesync's options from what the backend was called with: torch.compile(...,
    options={...}) hands them over as one `options` dict (merged with the keywords given
    directly), and its `mode` may be one of torch's (TORCH_MODES: ignored)."""
    options = dict(options)
    options.update(options.pop("options", None) or {})
    if options.get("mode") in TORCH_MODES:
        del options["mode"]
    return options


class StrictRefusal(UnsupportedError):
    """strict's refusal raised out of the backend (made a ShortenTraceback by `refusal`, which
    Dynamo lets through as it is rather than wrapping it in BackendCompilerFailed)."""


@functools.lru_cache(maxsize=1)
def _refusal_type() -> type:
    from torch._dynamo.exc import ShortenTraceback

    class DynamoStrictRefusal(StrictRefusal, ShortenTraceback):
        def __init__(self, message: str):
            super().__init__(message, first_useful_frame=None)
            self.message = message

        def __str__(self) -> str:  # the one line, not the hints Dynamo appends to args
            return self.message

    return DynamoStrictRefusal


def refusal(err: UnsupportedError) -> Exception:
    """`err` as an UnsupportedError of the same one line that Dynamo raises to the caller."""
    try:
        return _refusal_type()(str(err))
    except Exception:  # a torch whose Dynamo has no ShortenTraceback: the error itself
        return err


def tilesync_backend(gm: Any, example_inputs: list[Any], **options: Any) -> Any:
    import torch

    options = backend_options(options)
    inner = options.pop("inner", "auto")
    inputs = list(example_inputs)
    on_gpu = any(isinstance(t, torch.Tensor) and t.is_cuda for t in inputs)
    rewritten, report, parsed = gm, None, None
    try:
        if inner not in INNERS:
            raise ValueError(f"inner must be one of {INNERS}, got {inner!r}")
        parsed = Options.make(**options)
        with gc_paused() as collect_garbage:  # as tilesync.frontend.torch.compile
            rewritten, report = transform(gm, inputs, parsed)
            LAST_REPORTS.append(report)
            if inner == "auto" and on_gpu and parsed.mode == "auto":
                with torch.no_grad():  # as tilesync.frontend.torch.compile measures them
                    report.graph = graph_choice.choose(
                        _forms(gm, rewritten, report, inputs), inputs,
                        graph_key(gm, inputs, report), parsed.cache("torch-graph"),
                        host_delay_s=DYNAMO_CALL_S)
                if parsed.log:
                    print(f"tilesync: {report.graph.line()}", file=sys.stderr)
            if collect_garbage is not None:
                collect_garbage()
        if report.graph is not None:
            return report.graph.function
    except UnsupportedError as err:
        if parsed is not None and parsed.strict:  # asked for: the refusal, in one line
            raise refusal(err) from None
        print(f"tilesync: the graph stays with torch: {type(err).__name__}: {err}",
              file=sys.stderr)
        rewritten = gm
    except Exception as err:  # never a traceback from inside tilesync: torch keeps the graph
        print(f"tilesync: the graph stays with torch: {type(err).__name__}: {err}",
              file=sys.stderr)
        rewritten = gm
    if inner == "inductor" or (inner != "eager" and on_gpu):
        return _inductor(rewritten, inputs)
    return rewritten.forward


__all__ = ["INNERS", "LAST_REPORTS", "TORCH_MODES", "StrictRefusal", "backend_options",
           "tilesync_backend"]
