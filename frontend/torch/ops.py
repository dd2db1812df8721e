"""The compiled pieces as a torch.library op, `torch.ops.tilesync.piece(inputs, id)`.

    piece_op() -> the op (defined on first use): the piece's outputs, a list
    register(runner) -> id          the graph calls torch.ops.tilesync.piece(inputs, id)
    StageRunner(entry, out_shape, dtype)   a compiled stage program on torch tensors
    PipelineRunner(entry, form, dtype)     a compiled MLP stack's pipeline (stack.py's form)
    Relayout(runner, layouts, out_layout, out_shape)   its inputs and result permuted by torch
    eager_piece(ops, inputs, results)      the piece computed by torch (its own path)

A runner is called with the piece's inputs and returns its outputs (a list); `out_shapes`
and `dtype` say what they are (the op's fake implementation makes them).

A runner takes and returns torch tensors: the kernel arguments are the tensors' device
addresses (bound by the stages' #graph.bind), the temporaries and the result come from torch's
caching allocator, and every launch goes on torch's current stream (StageProgram.run_on), so
the op orders with the surrounding torch work and a torch.cuda.graph capture records it (the
kernels read their epoch from device memory: sync-epoch-in-memory). A weight a binding derives
(SwiGLU's gate and up interleaved, a Conv1D weight transposed) is made once per version of
its parameters (DerivedWeights). A piece registered without a runner (no GPU: tests of the
graph rewrite) computes with torch.

The op's backward recomputes the piece with torch and differentiates that (recomputed_backward):
a model that trains through a replaced piece gets torch's gradients, at the cost of a second
forward in torch.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tilesync.contract import IM2COL_CORNERS
from tilesync.dialects import graph
from tilesync.kernels.config import dtype_name
from tilesync.runtime.tensor_map import TensorMapCache

_RUNNERS: dict[int, Any] = {}
_EAGER: dict[int, tuple[list[tuple], tuple[int, ...]]] = {}  # (ops, results) for backward
_TAKES: dict[int, list[tuple[tuple[int, ...], Any]]] = {}  # the inputs' (shape, dtype)
_SHAPE_CONSTANTS: set[int] = set()  # pieces whose ops hold numbers read from those shapes
_IDS = itertools.count()
_LOCK = threading.Lock()


def register(runner: Any, ops: list[tuple], results: Sequence[int] = (-1,),
             takes: Sequence[tuple[tuple[int, ...], Any]] | None = None,
             shape_constants: bool = False) -> int:
    """The id of `runner`, computing the piece whose fx nodes are `ops` (eager_piece's form:
    the backward recomputes them with torch), compiled for inputs of the (shape, dtype)s in
    `takes` (None: any): a call with others is computed by torch (`run_piece`), unless
    `shape_constants`: the ops hold numbers read from those shapes (Piece.shape_constants)."""
    with _LOCK:
        piece_id = next(_IDS)
        _RUNNERS[piece_id] = runner
        _EAGER[piece_id] = (ops, tuple(results))
        if takes is not None:
            _TAKES[piece_id] = [(tuple(shape), dtype) for shape, dtype in takes]
        if shape_constants:
            _SHAPE_CONSTANTS.add(piece_id)
    return piece_id


def run_piece(inputs: list[Any], piece_id: int) -> list[Any]:
    """The piece's outputs: its runner's, or torch's (eager_piece) where an input's shape or
    dtype is not the one it was compiled for (a runner's sizes are fixed at compile time)."""
    takes = _TAKES.get(piece_id)
    if takes is not None and (len(takes) != len(inputs) or any(
            t.shape != shape or t.dtype != dtype
            for t, (shape, dtype) in zip(inputs, takes, strict=True))):
        if piece_id in _SHAPE_CONSTANTS and [tuple(t.shape) for t in inputs] != \
                [shape for shape, _ in takes]:  # torch's path would compute a stale number
            raise ValueError(
                f"tilesync piece {piece_id} reads a number from the shapes it was traced for, "
                f"{[shape for shape, _ in takes]} (an attention scale of q.size(-1)), not "
                f"{[tuple(t.shape) for t in inputs]}: call the compiled module, which runs "
                "the model itself for other shapes, or compile for these")
        ops, results = _EAGER[piece_id]
        return eager_piece(ops, inputs, results)
    return _RUNNERS[piece_id](inputs)


def runner(piece_id: int) -> Any:
    return _RUNNERS[piece_id]


_LIBRARY: list[Any] = []  # the op's torch.library.Library: registrations live while it does


@functools.lru_cache(maxsize=1)
def piece_op():
    """torch.ops.tilesync.piece, defined through torch.library.Library: a kernel of
    torch.library.custom_op runs behind torch._dynamo.disable, which imports Dynamo at the
    op's first call (1.0 s on an H200 host, inside a compile that measures our form)."""
    import torch

    lib = torch.library.Library("tilesync", "FRAGMENT")
    lib.define("piece(Tensor[] inputs, int piece) -> Tensor[]")

    def piece(inputs, piece):
        return run_piece(list(inputs), piece)

    def fake(inputs, piece):
        r = _RUNNERS[piece]
        return [inputs[0].new_empty(shape, dtype=r.dtype) for shape in r.out_shapes]

    def setup_context(ctx, inputs, output):
        ctx.piece = inputs[1]
        ctx.save_for_backward(*inputs[0])

    lib.impl("piece", piece, "CompositeExplicitAutograd")
    lib.impl("piece", fake, "Meta")  # what fake tensors run; register_fake would read this
    # file's source to name the registration (10 ms of a cached compile)
    torch.library.register_autograd("tilesync::piece", recomputed_backward,
                                    setup_context=setup_context, lib=lib)
    _LIBRARY.append(lib)
    return torch.ops.tilesync.piece.default


def recomputed_backward(ctx: Any, grads: Sequence[Any]) -> tuple[list[Any], None]:
    """The piece's input gradients: its forward recomputed by torch (eager_piece) and
    differentiated, so a model that trains through a replaced piece gets torch's gradients
    (the compiled kernels have no backward of their own)."""
    import torch

    ops, results = _EAGER[ctx.piece]
    inputs = ctx.saved_tensors
    needed = ctx.needs_input_grad[0]
    needed = needed if isinstance(needed, list | tuple) else [needed] * len(inputs)
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_(bool(n) and t.is_floating_point())
                  for t, n in zip(inputs, needed, strict=True)]
        outs = eager_piece(ops, leaves, results)
        pairs = [(o, g) for o, g in zip(outs, grads, strict=True)
                 if g is not None and o.requires_grad]
        wanted = [leaf for leaf in leaves if leaf.requires_grad]
        found = torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                                    allow_unused=True) if pairs and wanted else []
    by_leaf = iter(found)
    return [next(by_leaf) if leaf.requires_grad else None for leaf in leaves], None


def eager_piece(ops: list[tuple], inputs: list[Any], results: Sequence[int] = (-1,)
                ) -> list[Any]:
    """What the piece's fx nodes compute, with torch's own ops: the values of the ops
    `results` names (Piece.results)."""
    import torch
    import torch.nn.functional as F

    values: list[Any] = []

    def get(ref):
        if ref is None:
            return None
        return inputs[ref[1]] if ref[0] == "in" else values[ref[1]]

    for op in ops:
        kind = op[0]
        if kind == "linear":
            x, w = get(op[1]), get(op[2])
            if w.dim() > 2:  # q · kᵀ of heads or a batch, as torch wrote it
                values.append(x @ w.transpose(-2, -1))
            else:
                values.append(F.linear(x, w, get(op[3])))
        elif kind == "conv2d":  # torch's own NCHW
            values.append(F.conv2d(get(op[1]), get(op[2]), get(op[3]), op[4], op[5]))
        elif kind in ("gelu", "gelu_tanh"):
            values.append(F.gelu(get(op[1]), approximate="tanh" if kind == "gelu_tanh"
                                 else "none"))
        elif kind == "silu":
            values.append(F.silu(get(op[1])))
        elif kind == "relu":
            values.append(F.relu(get(op[1])))
        elif kind == "mul":
            values.append(get(op[1]) * get(op[2]))
        elif kind == "softmax":  # softmax(S · scale), S scaled as the fx nodes wrote it
            scores, scale, divisor, causal = get(op[1]), op[2], op[3], op[4]
            if divisor is not None:
                scores = scores / divisor
            elif scale != 1.0:
                scores = scores * scale
            if causal:  # key j > query i excluded, as masked_fill(~tril, -inf) does
                tokens, keys = scores.shape[-2:]
                later = torch.ones(tokens, keys, dtype=torch.bool, device=scores.device).triu(1)
                scores = scores.masked_fill(later, float("-inf"))
            values.append(scores.softmax(dim=-1))
        elif kind == "sdpa":  # torch's own fused attention, its scale as written
            values.append(F.scaled_dot_product_attention(get(op[1]), get(op[2]), get(op[3]),
                                                         is_causal=op[5], scale=op[6]))
        elif kind == "reshape":
            values.append(get(op[1]).reshape(op[2]))
        elif kind == "transpose":
            values.append(get(op[1]).permute(op[2]))
        elif kind == "matmul":
            values.append(get(op[1]) @ get(op[2]))
        elif kind == "split3":
            x = get(op[1])
            values.extend(x.split(x.shape[-1] // 3, dim=-1))
        elif kind == "cat":
            values.append(torch.cat([get(ref) for ref in op[1]], dim=op[2]))
        elif kind == "layer_norm":  # over the last dimension, with its weight and bias
            x = get(op[1])
            values.append(F.layer_norm(x, x.shape[-1:], get(op[2]), get(op[3]), op[4]))
        elif kind == "batch_norm":  # in eval mode, as torch's module runs it
            values.append(F.batch_norm(get(op[1]), get(op[2]), get(op[3]), get(op[4]),
                                       get(op[5]), False, 0.0, op[6]))
    return [values[i] for i in results]


class Relayout:
    """A runner of a piece whose graph function takes some inputs permuted (a conv chain:
    channels last): torch permutes them at the boundary, and the result back (patterns.py
    Piece.layouts, Piece.out_layout). `out_shape` is the piece's (torch's layout)."""

    def __init__(self, inner: Any, layouts: list[tuple[int, ...] | None],
                 out_layout: tuple[int, ...], out_shape: tuple[int, ...]):
        self.inner, self.layouts, self.out_layout = inner, layouts, out_layout
        self.out_shapes, self.dtype = [tuple(out_shape)], inner.dtype

    def __call__(self, inputs: list[Any]) -> list[Any]:
        moved = [t if layout is None else t.permute(layout).contiguous()
                 for t, layout in zip(inputs, self.layouts, strict=True)]
        (out,) = self.inner(moved)
        return [out.permute(self.out_layout).contiguous()]


def fold_batch_norm(weight: Any, bias: Any, mean: Any, var: Any, gamma: Any, beta: Any,
                    eps: float) -> tuple[Any, Any]:
    """(weight, bias) of a conv with the eval-mode batch norm after it folded in (None: a
    tensor the conv or the norm does not have), computed in fp32, kept in the conv's dtype."""
    import torch

    with torch.no_grad():
        scale = torch.rsqrt(var.float() + eps)
        if gamma is not None:
            scale = scale * gamma.float()
        shift = -mean.float() * scale + (0 if beta is None else beta.float())
        if bias is not None:
            shift = shift + bias.float() * scale
        folded = weight.float() * scale.reshape(-1, *[1] * (weight.dim() - 1))
    return folded.to(weight.dtype), shift.to(weight.dtype)


class FoldedBatchNorms:
    """A runner of a conv piece compiled with eval-mode batch norms folded into its convs
    (compiler.BatchNormFold), called with the convs' and the norms' own tensors: each folded
    weight and bias made from them again only when one changes in place or is another tensor
    (DerivedWeights' key), so later changes of the model's parameters and statistics reach
    the piece. `plan` gives, per input of `inner`, the index of an input, or ("weight" |
    "bias", indices of the conv's weight and bias and the norm's mean, var, weight and bias
    (None: absent), eps)."""

    def __init__(self, inner: Any, plan: list[Any]):
        self.inner, self.plan = inner, plan
        self.out_shapes, self.dtype = inner.out_shapes, inner.dtype
        self._derived = DerivedWeights()

    def _folded(self, entry: tuple, inputs: list[Any]) -> Any:
        which, where, eps = entry
        present = [i for i in where if i is not None]

        def make(*sources: Any) -> Any:
            given = iter(sources)
            return fold_batch_norm(*[None if i is None else next(given) for i in where], eps)

        pair = self._derived.get("batch_norm", tuple(-1 if i is None else i for i in where),
                                 [inputs[i] for i in present], make)
        return pair[0] if which == "weight" else pair[1]

    def __call__(self, inputs: list[Any]) -> list[Any]:
        return self.inner([inputs[entry] if isinstance(entry, int)
                           else self._folded(entry, inputs) for entry in self.plan])


class TorchPiece:
    """A registered piece computed by torch (no compiled program loaded)."""

    def __init__(self, ops: list[tuple], out_shapes: list[tuple[int, ...]], dtype: Any,
                 results: Sequence[int] = (-1,)):
        self.ops, self.out_shapes, self.dtype = ops, [tuple(s) for s in out_shapes], dtype
        self.results = tuple(results)

    def __call__(self, inputs: list[Any]) -> list[Any]:
        return eager_piece(self.ops, inputs, self.results)


def load_program(entry: dict[str, Any], cubin_dir: Any = None):
    """A StageProgram from a compiled entry (PTX per module, signatures, host plan text), its
    cubins kept in `cubin_dir` (None: the runtime's default), and its host IR."""
    from tilesync.api import parse
    from tilesync.contract import CompiledProgram
    from tilesync.runtime.program import StageProgram

    host = parse(entry["host"])
    compiled = CompiledProgram(entry["ptx_by_module"], {}, entry["kernels"], host,
                               target=entry["target"])
    return StageProgram(compiled, cubin_dir=cubin_dir), host


def gate_up_weight(gate: Any, up: Any) -> Any:
    """The SwiGLU epilogue's weight: rows of gate and up interleaved in blocks of 8."""
    import torch

    f, k = gate.shape
    return torch.stack([gate.reshape(f // 8, 8, k), up.reshape(f // 8, 8, k)], dim=1) \
        .reshape(2 * f, k).contiguous()


def transposed_weight(weight: Any) -> Any:
    """A K x N weight (Hugging Face's Conv1D: in x out) as the N x K row-major matrix the
    GEMMs read (nn.Linear's layout)."""
    return weight.t().contiguous()


DERIVED = {"gate_up": gate_up_weight, "transposed": transposed_weight}
"""The #graph.bind kinds whose tensor a runner derives from the piece's inputs."""


class DerivedWeights:
    """The tensors a runner derives from its inputs (DERIVED: SwiGLU's interleaved weight, a
    Conv1D weight transposed), one per binding, made again only when a source is another
    tensor or was changed in place: the key is each source's address and version counter
    (an optimizer step or load_state_dict's copy_ bumps it; a write through `.data` bumps
    none, and autograd misses it too), and a weak reference to it says the source is the
    same tensor, not a new one that the allocator put at a freed address with a fresh counter
    (an activation, or a copy made contiguous for the call)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, tuple[int, ...]], tuple[tuple, list[Any], Any]] = {}

    def get(self, kind: str, where: tuple[int, ...], sources: list[Any], make: Any = None
            ) -> Any:
        """The tensor of #graph.bind<kind where> for `sources` (the inputs it names); `make`
        derives it where it is no DERIVED kind (a conv's weight with a batch norm folded)."""
        make = make or DERIVED[kind]
        try:
            key = tuple((t.data_ptr(), t._version) for t in sources)
        except RuntimeError:  # an inference tensor keeps no version: derived at every call
            return make(*sources)
        kept = self._kept.get((kind, where))
        if kept is not None and kept[0] == key and \
                all(ref() is t for ref, t in zip(kept[1], sources, strict=True)):
            return kept[2]
        derived = make(*sources)
        self._kept[(kind, where)] = (key, [weakref.ref(t) for t in sources], derived)
        return derived


MAPS_KEPT = 256  # encoded TMA maps a runner keeps (torch's allocator reuses addresses)


def current_stream(device: Any) -> int:
    """torch's current stream on `device`, as its raw handle: the one call a launch from a
    model's forward makes to torch (torch.cuda.current_stream builds a Stream object each
    time; the raw lookup is what Triton's launcher uses, where this torch has it)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None and device.index is not None:
        return raw(device.index)
    return torch.cuda.current_stream(device).cuda_stream


@dataclass(frozen=True)
class _Bound:
    """A stage argument's #graph.bind, read once: its kind, the indices it names, and for a
    TMA map the map's element type, box, swizzle and im2col corners."""

    index: int  # among the runner's binds: the key of the map shapes it has computed
    bind: graph.BindAttr
    kind: str
    where: tuple[int, ...]
    tensor_map: tuple[str, tuple[int, ...], int, tuple | None] | None

    @staticmethod
    def of(index: int, bind: graph.BindAttr) -> _Bound:
        map_type = bind.map_type
        tensor_map = None if map_type is None else (
            dtype_name(map_type.element_type), tuple(map_type.shape), map_type.swizzle.data,
            IM2COL_CORNERS if map_type.is_im2col else None)
        return _Bound(index, bind, bind.kind.data, bind.values, tensor_map)


class StageRunner:
    """A compiled piece on torch tensors (see the module docstring)."""

    def __init__(self, entry: dict[str, Any], out_shape: tuple[int, ...], dtype: Any,
                 cubin_dir: Any = None):
        from tilesync.dialects import sync

        self.program, host = load_program(entry, cubin_dir)
        self.program.prepare()
        self.out_shapes, self.dtype = [tuple(out_shape)], dtype
        binds = [(op.sym_name.data, list(op.attributes[graph.BIND_ATTR].data))  # type: ignore
                 for op in host.ops if isinstance(op, sync.StageOp)]
        indices = itertools.count()
        self.binds: dict[str, list[_Bound]] = {
            stage: [_Bound.of(next(indices), bind) for bind in stage_binds]
            for stage, stage_binds in binds}
        self.temps = [tuple(shape) for shape in entry["temps"]]
        self.fp32_temps = entry.get("fp32_temps") or [False] * len(self.temps)
        self._derived = DerivedWeights()
        self._maps = TensorMapCache(limit=MAPS_KEPT)
        self._map_shapes: dict[tuple[int, tuple[int, ...]], tuple[int, ...]] = {}

    def _argument(self, bound: _Bound, tensor: Any) -> Any:
        """The kernel argument of a bound tensor: its address, or the TMA map the binding's
        type describes, over the shape the binding names (`BindAttr.map_tensor_shape`)."""
        if bound.tensor_map is None:
            return tensor.data_ptr()
        key = (bound.index, tensor.shape)
        shape = self._map_shapes.get(key)
        if shape is None:
            shape = self._map_shapes[key] = bound.bind.map_tensor_shape(tuple(tensor.shape))
        dtype, box, swizzle, corners = bound.tensor_map
        return self._maps.get(tensor.data_ptr(), dtype, shape, box, swizzle, corners)

    def _new(self, shape: tuple[int, ...], device: Any, fp32: bool = False) -> Any:
        """A temporary or the result, uninitialized: the kernels write every element they or
        the caller read (the GPU tests fill these with NaN to check that); in the piece's
        dtype, or fp32 where the program's temporary is."""
        import torch

        return torch.empty(shape, dtype=torch.float32 if fp32 else self.dtype, device=device)

    def __call__(self, inputs: list[Any]) -> list[Any]:
        inputs = [t if t.is_contiguous() else t.contiguous() for t in inputs]
        device = inputs[0].device
        temps = [self._new(shape, device, fp32)
                 for shape, fp32 in zip(self.temps, self.fp32_temps, strict=True)]
        out = self._new(self.out_shapes[0], device)

        def value(bound: _Bound) -> Any:
            kind, where = bound.kind, bound.where
            if kind == "input":
                return inputs[where[0]]
            if kind == "temp":
                return temps[where[0]]
            if kind == "result":
                return out
            return self._derived.get(kind, where, [inputs[i] for i in where])

        args = {stage: [self._argument(b, value(b)) for b in binds]
                for stage, binds in self.binds.items()}
        self.program.run_on(args, current_stream(device))
        return [out]


_ON_THE_FAST_TIER: weakref.WeakSet = weakref.WeakSet()  # runners on the fast kernels
_kernel_moves = 0  # how many runners have moved to their full kernels in this process
_ours_capturing = 0  # captures of ours under way (cost.capture_graph): see PipelineRunner


def finish_full_compiles() -> None:
    """Wait until every pipeline runner runs its fully compiled kernels (each moves at its next
    call): what a benchmark does before timing, so that it times those."""
    for runner in list(_ON_THE_FAST_TIER):
        runner.upgrade(wait=True)


def on_the_fast_tier() -> bool:
    """Whether some pipeline runner still runs the fast tier's kernels: what is measured now
    is not what later runs (compiler._tuned and graph_choice cache such a measurement only
    where ours won). A runner whose full kernels have landed is moved to them first: one
    left from an earlier compile and not called since runs nothing measured now, and would
    keep every later choice for torch out of the cache."""
    kernel_moves()
    return bool(_ON_THE_FAST_TIER)


def measurement_stands(fast_before: bool, ours_won: bool) -> bool:
    """Whether a measurement may be cached that began with `fast_before` (on_the_fast_tier()
    then): one made while a pipeline ran its fast tier timed kernels later calls do not run,
    and stands only where ours won (the full kernels only run faster); a choice for torch from
    it is measured again by the next process."""
    return ours_won or not (fast_before or on_the_fast_tier())


def kernel_moves() -> int:
    """Moves every runner whose full kernels have landed to them (a replay of a CUDA graph
    calls no runner that would), and returns a count that changes at each move: a graph of
    ours captured before one (replay.GraphReplay) captures again."""
    if _ON_THE_FAST_TIER:
        for runner in list(_ON_THE_FAST_TIER):
            runner.upgrade()
    return _kernel_moves


@contextmanager
def ours_capturing() -> Iterator[None]:
    """A capture of ours (a measurement's, or a replay's that captures again after the kernels
    move): a runner on the fast tier is recorded as it is, not made to wait for its full
    kernels as under a caller's capture."""
    global _ours_capturing
    _ours_capturing += 1
    try:
        yield
    finally:
        _ours_capturing -= 1


class PipelineRunner:
    """A compiled MLP stack (compiler.compile_stack_entry) on torch tensors: the graph
    function's arguments made by the stack's adapters (stack.py; a weight's or bias's once
    per version of the parameter), the pipeline's one cooperative launch on torch's current
    stream (DataflowProgram.run_on: a torch.cuda.graph capture records it, and the queues'
    tickets carry on from run to run without a memset), each result cut back to torch's width
    and leading dimensions. Its kernels are tiered (runtime.dataflow.TIERED_PIPELINES): `full`
    says whether it runs the fully compiled ones yet; a call a caller's stream capture records
    waits for them, since that graph would replay the kernels it recorded for good (the front
    end's own captures do not wait: ours_capturing)."""

    def __init__(self, entry: dict[str, Any], form: Any, dtype: Any, cubin_dir: Any = None):
        from xdsl.dialects.builtin import ModuleOp

        from tilesync.contract import CompiledProgram
        from tilesync.runtime.dataflow import (
            TIERED_PIPELINES,
            DataflowProgram,
            compile_in_full,
            compiled_in_full,
            full_compiles,
        )
        from tilesync.runtime.module import disk_cache_enabled

        compiled = CompiledProgram(entry["ptx_by_module"], {}, entry["kernels"], ModuleOp([]),
                                   target=entry["target"])
        self._cubin_dir = cubin_dir
        tiered = TIERED_PIPELINES and disk_cache_enabled() and not compiled_in_full(
            entry["ptx_by_module"], entry["target"], cubin_dir)
        self.program = DataflowProgram(compiled, plan=entry["plan"], cubin_dir=cubin_dir,
                                       fast=tiered)
        self.full = not tiered
        self._full_compile = full_compiles().submit(
            compile_in_full, entry["ptx_by_module"], entry["target"], cubin_dir) \
            if tiered else None
        if tiered:
            _ON_THE_FAST_TIER.add(self)
        self.binds: dict[str, list[tuple[str, tuple[int, ...]]]] = entry["binds"]
        self.form, self.dtype = form, dtype
        self.results = [tuple(shape) for shape in entry["results"]]
        self.out_shapes = [(*form.lead, width) for width in form.out_widths]
        self._parameters: dict[int, tuple[tuple, Any, int]] = {}

    def _arguments(self, inputs: list[Any]) -> tuple[list[int], list[Any]]:
        """The device address of each graph argument, and the activations made for this call
        (kept alive until the launch is enqueued)."""
        pointers, made = [], []
        for index, adapter in enumerate(self.form.adapters):
            if not adapter.is_parameter_of:
                tensor = adapter.apply(inputs, inputs[0])
                made.append(tensor)
                pointers.append(tensor.data_ptr())
                continue
            source = None if adapter.source is None else inputs[adapter.source]
            key = ("zeros", inputs[0].device) if source is None else \
                (source.data_ptr(), source._version)
            kept = self._parameters.get(index)
            if kept is None or kept[0] != key:
                tensor = adapter.apply(inputs, inputs[0])
                kept = (key, tensor, tensor.data_ptr())
                self._parameters[index] = kept
            pointers.append(kept[2])
        return pointers, made

    def _new(self, shape: tuple[int, ...], device: Any) -> Any:
        """A result, uninitialized: the pipeline writes every element (the GPU tests fill it
        with NaN to check that)."""
        import torch

        return torch.empty(shape, dtype=self.dtype, device=device)

    def upgrade(self, wait: bool = False, capturing: bool = False) -> bool:
        """Move to the fully compiled kernels once they are in the disk cache (`wait`: wait
        for their compile; `capturing`: a stream capture is under way, so wait, and load
        them in relaxed capture mode); True where it runs them. A full compile that failed,
        or whose kernels the device cannot hold all at once, leaves the fast ones running."""
        from contextlib import nullcontext

        from tilesync.contract import TilesyncError
        from tilesync.runtime.stream import relaxed_capture_mode

        future = self._full_compile
        if self.full or future is None or not (wait or capturing or future.done()):
            return self.full
        self._full_compile = None
        _ON_THE_FAST_TIER.discard(self)
        if future.exception() is None and future.result():
            try:
                with relaxed_capture_mode() if capturing else nullcontext():
                    self.program.load_kernels(False, self._cubin_dir)
            except TilesyncError:
                return False
            global _kernel_moves
            self.full, _kernel_moves = True, _kernel_moves + 1
        return self.full

    def __call__(self, inputs: list[Any]) -> list[Any]:
        device = inputs[0].device
        stream = current_stream(device)
        if not self.full:
            from tilesync.runtime.stream import is_capturing

            # a caller's graph captured on the fast kernels would replay them for good
            self.upgrade(capturing=not _ours_capturing and is_capturing(stream))
        pointers, _made = self._arguments(inputs)
        outs = [self._new(shape, device) for shape in self.results]
        results = [out.data_ptr() for out in outs]
        self.program.run_on({stage: [pointers[where] if kind == "input" else results[where]
                                     for kind, (where, *_) in binds]
                             for stage, binds in self.binds.items()},
                            stream)
        return [(out if out.shape[-1] == width else out[:, :width].contiguous())
                .reshape(shape)
                for out, width, shape in zip(outs, self.form.out_widths, self.out_shapes,
                                             strict=True)]


__all__ = ["DERIVED", "DerivedWeights", "FoldedBatchNorms", "PipelineRunner", "Relayout",
           "StageRunner", "TorchPiece", "eager_piece", "finish_full_compiles", "fold_batch_norm",
           "gate_up_weight", "kernel_moves", "load_program", "measurement_stands",
           "on_the_fast_tier", "ours_capturing", "piece_op", "register", "run_piece", "runner",
           "transposed_weight"]
