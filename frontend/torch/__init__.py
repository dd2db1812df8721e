"""PyTorch front end: torch.fx pattern matching → graph level → stage programs.

    torch.compile(model, backend="tilesync")          (the entry point's backend)
    tilesync.frontend.torch.compile(module, example_inputs, mode=None, strict=False)
        -> CompiledModule (callable; .report)
    tilesync.frontend.torch.explain(module, *example_inputs) -> str   (and printed)

Pieces of the model that match the pattern library (patterns.py: Linear→act→Linear, the SwiGLU
MLP, self-attention (heads, a batch of sequences, its scores scaled by a constant, causal; as
matmul/softmax or scaled_dot_product_attention); their linears nn.Linear, F.linear or Hugging
Face's Conv1D (GPT-2's); Conv→ReLU→Conv with eval-mode
BatchNorms folded into the convs; stack.py: NeRF-style MLP stacks) are lowered through the
graph level (graph-to-stages) to synchronized stage programs (graph-to-dataflow: an MLP stack
to one Kitsune pipeline) and run as `torch.ops.tilesync.piece` where the cost model and a
measurement say they beat torch's own path; everything else stays with torch. In auto mode the
whole graph then runs in the form measured fastest, with our pieces or as torch's own
(graph_choice). torch (≥ 2.4) is imported only when these functions run.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from tilesync.api import gc_paused
from tilesync.frontend.torch.compiler import Options, Report, UnsupportedError, transform

__all__ = ["CompiledModule", "UnsupportedError", "backend", "compile", "explain",
           "finish_compiles"]


class CompiledModule:
    """A traced module with its pieces replaced; call it like the module. `function` is what
    a call runs: the graph module, or the form of the graph measured fastest (report.graph).
    Given the `module` and the examples it was traced for, a call the trace does not stand for
    runs the module itself, torch's path (`fits`)."""

    def __init__(self, graph_module: Any, report: Report, function: Any = None,
                 module: Any = None, example_inputs: Any = ()):
        self.graph_module, self.report = graph_module, report
        self.function = function if function is not None else graph_module
        self.module = module
        self._takes = [_described(value) for value in example_inputs]
        self._training = getattr(module, "training", None)

    def fits(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether a call is one the trace stands for: the examples' positional inputs
        (tensors of their shapes, dtypes and devices; defaults left out as they were) and the
        module training or not as when it was traced (symbolic_trace bakes `self.training`:
        dropout, a batch norm's statistics)."""
        if self.module is None:
            return True
        return not kwargs and getattr(self.module, "training", None) == self._training and \
            len(args) == len(self._takes) and \
            all(_described(a) == t for a, t in zip(args, self._takes, strict=True))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.fits(args, kwargs):  # compiled for other inputs: torch's own path
            return self.module(*args, **kwargs)
        if kwargs:  # the forms are measured and called with positional inputs
            return self.graph_module(*args, **kwargs)
        return self.function(*args)


def _described(value: Any) -> Any:
    """What a call's input must keep for the trace to stand for it: a tensor's shape, dtype
    and device; another value's type."""
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return (tuple(shape), value.dtype, value.device)
    return type(value)


def _check_torch():
    try:
        import torch
    except ImportError as err:
        raise UnsupportedError("tilesync.frontend.torch needs PyTorch (pip install torch)") \
            from err
    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    if (major, minor) < (2, 4):
        raise UnsupportedError(f"tilesync.frontend.torch needs torch >= 2.4, found "
                               f"{torch.__version__}")
    return torch


def compile(module: Any, example_inputs: Any, *, mode: str | None = None, strict: bool = False,
            emit_ptx: bool = False, log: bool | None = None,
            cache_dir: Any = None, tune: bool | None = None) -> CompiledModule:
    """`module` traced by torch.fx with its matched pieces compiled (see the module docstring).

    mode: "auto" (the cost model and a measurement decide; TILESYNC_MODE overrides the
    default), "tilesync" or "torch" (every piece that way). strict: an unsupported piece
    (dtype, shape, device, no GPU) raises UnsupportedError instead of staying with torch.
    emit_ptx: compile pieces to PTX even where they cannot run (CPU, no GPU). tune: compile
    and time every form of a piece that has several (an MLP stack's CTA allotments; the
    TILESYNC_TUNE default), not only the one the model sizes."""
    torch = _check_torch()
    if not callable(module):
        raise UnsupportedError("compile takes a torch.nn.Module or a function of tensors, got "
                               f"{type(module).__name__}")
    options = Options.make(mode, strict, emit_ptx, log, cache_dir, tune)
    inputs = list(example_inputs) if isinstance(example_inputs, list | tuple) \
        else [example_inputs]
    import inspect

    try:  # one example per input: the pieces are compiled for the examples' shapes
        inspect.signature(getattr(module, "forward", module)).bind(*inputs)
    except TypeError as err:
        raise UnsupportedError(f"example_inputs do not fit the model's inputs: {err} (pass "
                               "one example tensor per input, in a list)") from None
    except ValueError:  # no signature to check (a builtin): tracing says what is wrong
        pass
    try:  # arguments left out keep their defaults (mask=None) in the trace
        gm = torch.fx.symbolic_trace(module, concrete_args=_defaults_left_out(module, inputs))
    except Exception:  # data-dependent Python: let Dynamo capture the graphs instead
        return _through_dynamo(torch, module, inputs, options)
    with gc_paused() as collect_garbage:  # a full collection would walk torch's and xDSL's
        rewritten, report = transform(gm, inputs, options)  # objects: 0.1 s of a cached one
        if options.mode == "auto" and report.ours:  # pieces of ours: on a GPU, inputs there
            from tilesync.frontend.torch import graph_choice
            from tilesync.frontend.torch.compiler import graph_key

            forms = {graph_choice.OURS: lambda: rewritten, graph_choice.EAGER: lambda: gm}
            with torch.no_grad():  # the forms measured for inference; a replay falls back
                report.graph = graph_choice.choose(  # on autograd (replay.GraphReplay)
                    graph_choice.with_replays(forms, inputs), inputs,
                    graph_key(gm, inputs, report), options.cache("torch-graph"))
            if options.log:
                print(f"tilesync: {report.graph.line()}", file=sys.stderr)
        if collect_garbage is not None:  # what the compile left, young: not the user's cost
            collect_garbage()
    return CompiledModule(rewritten, report, report.graph.function if report.graph else None,
                          module, inputs)


def _defaults_left_out(module: Any, inputs: list[Any]) -> dict[str, Any] | None:
    """The forward's parameters the examples leave out, with their defaults: symbolic_trace
    would make each a placeholder and trace `if mask is not None` with a Proxy."""
    import inspect

    try:
        signature = inspect.signature(getattr(module, "forward", module))
        bound = signature.bind(*inputs)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    left = {name: p.default for name, p in signature.parameters.items()
            if name not in bound.arguments and p.kind in kinds
            and p.default is not inspect.Parameter.empty}
    return left or None


def _through_dynamo(torch: Any, module: Any, inputs: list[Any], options: Options):
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    def backend(gm, example_inputs):
        return tilesync_backend(gm, example_inputs, mode=options.mode, strict=options.strict,
                                emit_ptx=options.emit_ptx, log=options.log,
                                cache_dir=options.cache_dir, tune=options.tune)

    # static shapes: the example's are what the pieces are compiled for, and Dynamo would
    # otherwise make a dimension symbolic once this code was compiled for another shape
    compiled = torch.compile(module, backend=backend, dynamic=False)
    first = len(LAST_REPORTS)
    with torch.no_grad():
        compiled(*inputs)
    report = Report()
    for part in LAST_REPORTS[first:]:
        report.pieces += part.pieces
        report.notes += part.notes
    for index, piece in enumerate(report.pieces):
        piece.index = index
    return CompiledModule(compiled, report)


def explain(module: Any, *example_inputs: Any, **options: Any) -> str:
    """What tilesync makes of `module`: per piece, the choice, the predicted and measured times
    (printed, and returned). PTX is generated even where the pieces cannot run here."""
    options.setdefault("emit_ptx", True)
    options["log"] = False
    text = compile(module, list(example_inputs), **options).report.text()
    print(text)
    return text


def finish_compiles() -> None:
    """Wait for the kernels still compiling in full behind the ones a first call runs
    (runtime.dataflow.TIERED_PIPELINES): time a compiled module after this."""
    from tilesync.frontend.torch.ops import finish_full_compiles

    finish_full_compiles()


def backend(gm: Any, example_inputs: Any, **options: Any) -> Any:
    """The torch.compile backend (also registered as backend="tilesync")."""
    from tilesync.frontend.torch.backend import tilesync_backend

    return tilesync_backend(gm, example_inputs, **options)


class _Package(types.ModuleType):
    """This package, whose `backend` stays the function above once its submodule of the same
    name is imported (the import system then sets the package's attribute to the submodule;
    `from tilesync.frontend.torch.backend import ...` finds it in sys.modules)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "backend" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
