"""The `torch.compile` backend: `torch.compile(model, backend="tilesync")`.

Registered through the `torch_dynamo_backends` entry point (pyproject.toml). Dynamo hands over
each captured graph; its pieces go through compiler.transform, and the rest runs as torch
would run it: Inductor for CUDA graphs (what `torch.compile` does by default), the graph itself
on the CPU. Nothing raises out of the backend: a failure of tilesync leaves the graph to torch
and the reason in the log.
"""

from __future__ import annotations

import sys
from typing import Any

from tilesync.frontend.torch.compiler import Options, transform

LAST_REPORTS: list[Any] = []
"""The reports of the graphs compiled by this process, newest last (for explain and tests)."""


def tilesync_backend(gm: Any, example_inputs: list[Any], **options: Any) -> Any:
    import torch

    inner = options.pop("inner", "auto")
    try:
        gm, report = transform(gm, list(example_inputs), Options.make(**options))
        LAST_REPORTS.append(report)
    except Exception as err:  # never a traceback from inside tilesync: torch keeps the graph
        print(f"tilesync: the graph stays with torch: {type(err).__name__}: {err}",
              file=sys.stderr)
    on_gpu = any(isinstance(t, torch.Tensor) and t.is_cuda for t in example_inputs)
    if inner == "inductor" or (inner == "auto" and on_gpu):
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(gm, example_inputs)
    return gm.forward


__all__ = ["LAST_REPORTS", "tilesync_backend"]
