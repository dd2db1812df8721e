"""NeRF-style MLP stacks in an fx graph, as one piece that graph-to-dataflow makes a pipeline.

    match_stack_at(gm, first) -> Piece | None     the stack whose first layer is `first`
    stack_function(piece) -> builtin.module        its graph function, at the kernels' widths

A stack is what graph-to-dataflow takes (transforms/graph/graph_to_dataflow.py), as torch
writes it:

    h = x
    h = relu?(linear(h | cat([a, h]) | cat([h, a]), w_l[, b_l]))      layer by layer
    s = linear(h, w_s[, b_s])        (one output, beside a layer: NeRF's density)
    y = layer_norm(h, (width,), gamma, beta, eps)   (optional, last: MeshGraphNets' MLPs)

with a = x (a skip) or any tensor computed before the stack (a side input: NeRF's directions).
Every intermediate is read only by the next layer (and the dot head); the last layer's output
(or its layer norm's) and the dot head's are the piece's results. It has two layers or more,
and three or more where a plain Linear→act→Linear pair (patterns.py) would do. A layer norm
takes the last layer's width as torch has it: normalized over padded columns, its mean and
variance would not be torch's.

The kernels take widths that torch's models do not always have (NeRF's 63-wide position and
27-wide direction encodings, its 3 colours): the piece's graph function is the stack at the
kernels' widths, and `Adapter`s make its arguments from torch's tensors at the boundary, as
ops.Relayout permutes a conv's: an activation's columns zero-padded to whole 64-column
k-tiles, a weight zero-padded (rows to its layer's padded width, columns to where the kernel
reads them: a concatenation's columns first, `cat([h, a])`'s weight columns swapped to that
order), a bias zero-padded (or zeros where the Linear has none). Zero weights and biases keep
the padded columns zero through ReLU, so the padded stack computes torch's values in its first
columns; each result is cut back to torch's width.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region, SSAValue

from tilesync.dialects import graph
from tilesync.frontend.torch.patterns import (
    Piece,
    _arg,
    _call,
    _is_node,
    _single_use,
    activation,
    element_type,
    layer_norm_parts,
    linear_parts,
    tensor_info,
)

PATTERN = "MLP stack"
K_TILE = 64  # a layer's input columns: whole wgmma k-tiles (mlp_pipeline.BK)
N_STEP = 16  # the last layer's output: whole 16-column warp tiles


def _round(n: int, step: int) -> int:
    return -(-n // step) * step


@dataclass(frozen=True)
class Adapter:
    """How one argument of the graph function is made from a piece input (`source`):
        "rows"     an activation as rows x columns, zero-padded to `cols` columns
        "weight"   zeros(rows, cols) with blocks (torch column, kernel column, count) copied
        "bias"     a vector (a bias, a layer norm's weight or bias) zero-padded to `rows`
                   (`source` None: all zeros)"""

    kind: str
    source: int | None
    rows: int = 0
    cols: int = 0
    blocks: tuple[tuple[int, int, int], ...] = ()

    def apply(self, inputs: list[Any], like: Any) -> Any:
        import torch

        if self.kind == "rows":
            x = inputs[self.source]
            x = x.reshape(-1, x.shape[-1])
            if x.shape[-1] == self.cols:
                return x if x.is_contiguous() else x.contiguous()
            return torch.nn.functional.pad(x, (0, self.cols - x.shape[-1]))
        if self.kind == "weight":
            w = inputs[self.source]
            if tuple(w.shape) == (self.rows, self.cols) and self.blocks == ((0, 0, self.cols),):
                return w.contiguous()
            out = w.new_zeros((self.rows, self.cols))
            for src, dst, count in self.blocks:
                out[:w.shape[0], dst:dst + count] = w[:, src:src + count]
            return out
        if self.source is None:
            return like.new_zeros((self.rows,))
        b = inputs[self.source]
        return b.contiguous() if b.shape[0] == self.rows else \
            torch.nn.functional.pad(b, (0, self.rows - b.shape[0]))

    @property
    def is_parameter_of(self) -> bool:
        """Whether the argument depends only on a weight or bias (cached between calls)."""
        return self.kind != "rows"


@dataclass
class StackForm:
    """The stack at the kernels' widths: the graph function's arguments (adapters), what each
    layer reads, and each result's torch width."""

    rows: int
    lead: tuple[int, ...]  # torch's leading dimensions of every activation
    widths: list[int]  # padded: input, then each layer's output
    torch_widths: list[int]  # as torch has them
    adapters: list[Adapter] = field(default_factory=list)
    layers: list[dict[str, Any]] = field(default_factory=list)
    """Per layer: weight and bias argument, `cat`: ("skip" | argument of the side input, its
    padded width) or None, `relu`."""
    dot: tuple[int, int, int] | None = None  # (layer, weight argument, bias argument)
    norm: tuple[int, int, float] | None = None  # the layer norm's (weight arg, bias arg, eps)
    out_widths: list[int] = field(default_factory=list)  # torch's width of each result

    def description(self, dtype: Any) -> str:
        parts = []
        for index, layer in enumerate(self.layers):
            if layer["cat"] is not None:
                parts.append("skip" if layer["cat"][0] == "skip" else "side input")
                parts[-1] += f" at {index}"
        if self.dot is not None:
            parts.append(f"dot head at {self.dot[0]}")
        if self.norm is not None:
            parts.append("layer norm")
        extra = f"; {', '.join(parts)}" if parts else ""
        return (f"{PATTERN} [{self.rows} rows, {' -> '.join(map(str, self.torch_widths))}, "
                f"{str(dtype).replace('torch.', '')}{extra}]")


def _cat_parts(node: Any) -> tuple[list[Any], Any] | None:
    if not _call(node, "cat"):
        return None
    items = _arg(node, 0, "tensors")
    return (list(items), _arg(node, 1, "dim", 0)) if isinstance(items, list | tuple) else None


def _info(gm: Any, ref: Any):
    return tensor_info(gm, ref) if (isinstance(ref, str) or _is_node(ref)) else None


class _Walk:
    """The fx walk of one stack (see the module docstring); `piece` None where it is none."""

    def __init__(self) -> None:
        self.refs: list[Any] = []
        self.ops: list[tuple] = []
        self.nodes: list[Any] = []
        self.layers: list[dict[str, Any]] = []
        self.dot: dict[str, Any] | None = None
        self.norm: dict[str, Any] | None = None

    def ref(self, value: Any) -> tuple[str, int]:
        for i, known in enumerate(self.refs):
            if known is value:
                return ("in", i)
        self.refs.append(value)
        return ("in", len(self.refs) - 1)

    def emit(self, op: tuple) -> tuple[str, int]:
        self.ops.append(op)
        return ("op", len(self.ops) - 1)


def _one_output_linear(gm: Any, node: Any, h: Any) -> bool:
    parts = linear_parts(gm, node)
    info = _info(gm, parts[1]) if parts is not None else None
    return parts is not None and parts[0] is h and info is not None and info.shape[0] == 1


def match_stack_at(gm: Any, first: Any, dot_head: bool = True) -> Piece | None:
    """The stack whose first layer is the linear node `first`, or None (too short, or not a
    stack); without `dot_head`, a one-output linear beside a layer ends the stack there (its
    input the stack's output) instead of joining it."""
    parts = linear_parts(gm, first)
    if parts is None or not _is_node(parts[0]):
        return None
    walk = _Walk()
    x = parts[0]
    h, h_ref = x, walk.ref(x)
    op = first
    dot_node = None
    while True:
        cat = None
        if _cat_parts(op) is not None:
            items, dim = _cat_parts(op)
            info = _info(gm, h)
            if info is None or len(items) != 2 or dim not in (-1, len(info.shape) - 1) or \
                    sum(item is h for item in items) != 1 or not _single_use(op):
                break
            other = items[1] if items[0] is h else items[0]
            if not _is_node(other) or other in walk.nodes or not walk.layers:
                break
            linear = next(iter(op.users))
            cat = (other, items[0] is h)  # (the other input, torch's columns h first)
        else:
            linear = op
        lparts = linear_parts(gm, linear)
        if lparts is None or lparts[0] is not (op if cat else h):
            break
        _, w, b = lparts
        relu = None
        if _single_use(linear):
            act = activation(gm, next(iter(linear.users)))
            if act is not None and act[0] == "relu" and act[1] is linear:
                relu = next(iter(linear.users))
        # the layer is taken: its ops for torch's path
        if cat is not None:
            other_ref = walk.ref(cat[0])
            pair = [h_ref, other_ref] if cat[1] else [other_ref, h_ref]
            a_ref = walk.emit(("cat", pair, -1))
            walk.nodes.append(op)
        else:
            a_ref = h_ref
        out_ref = walk.emit(("linear", a_ref, walk.ref(w), walk.ref(b) if b is not None else None))
        walk.nodes.append(linear)
        if relu is not None:
            out_ref = walk.emit(("relu", out_ref))
            walk.nodes.append(relu)
        walk.layers.append({"w": w, "b": b, "cat": cat, "relu": relu is not None})
        h, h_ref = relu if relu is not None else linear, out_ref
        # what reads h next: one layer, beside it at most one dot head
        users = list(h.users)
        heads = [u for u in users if _one_output_linear(gm, u, h)] if dot_head else []
        nexts = [u for u in users if u not in heads]
        if not nexts and len(heads) == 1:  # beside no layer: the stack's last, one wide
            nexts, heads = heads, []
        if len(nexts) != 1 or len(heads) > 1 or (heads and walk.dot is not None):
            break
        follow = nexts[0]
        if heads:
            if _cat_parts(follow) is not None:  # the dot head reads a layer's whole input
                break
            dot_node = heads[0]
        elif not (linear_parts(gm, follow) is not None or _cat_parts(follow) is not None):
            break
        if heads:
            walk.dot = {"layer": len(walk.layers), "node": dot_node, "input": h_ref}
        op = follow
    # a dot head beside no layer the walk took (it stopped at the layer beside) stays with torch
    if walk.dot is not None and walk.dot["layer"] >= len(walk.layers):
        walk.dot = None
    if walk.dot is not None:
        _, ws, bs = linear_parts(gm, walk.dot["node"])
        walk.dot.update(w=ws, b=bs, ref=walk.emit(("linear", walk.dot["input"], walk.ref(ws),
                                                   walk.ref(bs) if bs is not None else None)))
        walk.nodes.append(walk.dot["node"])
    norm = next(iter(h.users)) if walk.layers and _single_use(h) else None
    parts = layer_norm_parts(gm, norm) if norm is not None else None
    last_w = _info(gm, walk.layers[-1]["w"]) if walk.layers else None
    # normalized over the last layer's columns, none of them padding (else it stays torch's)
    if parts is not None and parts[0] is h and last_w is not None and \
            parts[3] == (last_w.shape[0],) and last_w.shape[0] % N_STEP == 0:
        _, gamma, beta, _, eps = parts
        h_ref = walk.emit(("layer_norm", h_ref, walk.ref(gamma), walk.ref(beta), eps))
        walk.norm = {"w": gamma, "b": beta, "eps": eps}
        walk.nodes.append(norm)
        h = norm
    count = len(walk.layers)
    special = any(layer["relu"] or layer["cat"] for layer in walk.layers) or \
        walk.dot is not None or walk.norm is not None
    if count < 2 or (count < 3 and not special):
        return None
    return _piece(gm, walk, x, h, h_ref)


def _piece(gm: Any, walk: _Walk, x: Any, h: Any, h_ref: tuple) -> Piece | None:
    infos = [_info(gm, r) for r in walk.refs]
    out_info = _info(gm, h)
    if any(i is None for i in infos) or out_info is None:
        return None
    xi = infos[0]
    lead = tuple(xi.shape[:-1])
    rows = 1
    for d in lead:
        rows *= d
    widths, torch_widths = [_round(xi.shape[-1], K_TILE)], [xi.shape[-1]]
    adapters = [Adapter("rows", 0, cols=widths[0])]
    args: dict[int, int] = {}  # piece input index -> the graph argument of its activation

    def activation_arg(value: Any) -> int:
        index = walk.ref(value)[1]
        if index not in args:
            info = infos[index]
            if tuple(info.shape[:-1]) != lead:
                raise _NotAStack
            adapters.append(Adapter("rows", index, cols=_round(info.shape[-1], K_TILE)))
            args[index] = len(adapters) - 1
        return args[index]

    args[0] = 0
    form = StackForm(rows, lead, widths, torch_widths, adapters)
    last = len(walk.layers) - 1
    try:
        for index, layer in enumerate(walk.layers):
            w_info = infos[walk.ref(layer["w"])[1]]
            n = w_info.shape[0]
            padded = _round(n, N_STEP if index == last else K_TILE)
            h_cols, h_padded = torch_widths[-1], widths[-1]
            blocks: list[tuple[int, int, int]] = []
            cat = None
            if layer["cat"] is None:
                blocks.append((0, 0, h_cols))
                cols = h_padded
            else:
                other, h_first = layer["cat"]
                arg = 0 if other is x else activation_arg(other)
                a_cols = infos[walk.ref(other)[1]].shape[-1]
                a_padded = adapters[arg].cols
                if h_first:
                    blocks += [(h_cols, 0, a_cols), (0, a_padded, h_cols)]
                else:
                    blocks += [(0, 0, a_cols), (a_cols, a_padded, h_cols)]
                cols = a_padded + h_padded
                cat = ("skip" if other is x else arg, a_padded)
            if w_info.shape[1] != sum(c for _, _, c in blocks):
                raise _NotAStack
            adapters.append(Adapter("weight", walk.ref(layer["w"])[1], padded, cols,
                                    tuple(blocks)))
            w_arg = len(adapters) - 1
            b = layer["b"]
            adapters.append(Adapter("bias", walk.ref(b)[1] if b is not None else None, padded))
            form.layers.append({"w": w_arg, "b": w_arg + 1, "cat": cat, "relu": layer["relu"]})
            widths.append(padded)
            torch_widths.append(n)
            if walk.dot is not None and walk.dot["layer"] == index + 1:
                ws, bs = walk.dot["w"], walk.dot["b"]
                adapters.append(Adapter("weight", walk.ref(ws)[1], 1, padded, ((0, 0, n),)))
                adapters.append(Adapter("bias", walk.ref(bs)[1] if bs is not None else None, 1))
                form.dot = (index + 1, len(adapters) - 2, len(adapters) - 1)
        if walk.norm is not None:  # the last layer's width, unpadded (the walk checked)
            for value in (walk.norm["w"], walk.norm["b"]):
                adapters.append(Adapter("bias", walk.ref(value)[1], widths[-1]))
            form.norm = (len(adapters) - 2, len(adapters) - 1, walk.norm["eps"])
    except _NotAStack:
        return None
    piece = Piece(PATTERN, h, list(walk.nodes))
    piece.inputs, piece.ops, piece.infos, piece.out_info = walk.refs, walk.ops, infos, out_info
    piece.stack = form
    form.out_widths = [torch_widths[-1]]
    piece.results = [h_ref[1]]
    if walk.dot is not None:
        dot_info = _info(gm, walk.dot["node"])
        if dot_info is None:
            return None
        piece.more_outputs, piece.more_infos = [walk.dot["node"]], [dot_info]
        piece.results.append(walk.dot["ref"][1])
        form.out_widths.append(1)
    taken = {id(n) for n in walk.nodes}
    piece.nodes = [n for n in gm.graph.nodes if id(n) in taken]
    return piece


class _NotAStack(Exception):
    """The walk's nodes are no stack the kernels can take at any padding."""


def stack_function(piece: Piece) -> ModuleOp:
    """func.func @piece(the adapters' arguments) -> (Y[, S]): the stack at the kernels' widths,
    in graph-to-dataflow's form (a concatenation's argument first)."""
    form = piece.stack
    assert form is not None
    element = element_type(piece.infos[0].dtype)
    types = []
    for adapter in form.adapters:
        if adapter.kind == "rows":
            types.append(TensorType(element, [form.rows, adapter.cols]))
        elif adapter.kind == "weight":
            types.append(TensorType(element, [adapter.rows, adapter.cols]))
        else:
            types.append(TensorType(element, [adapter.rows]))
    block = Block(arg_types=types)
    args = block.args
    h: SSAValue = args[0]
    results: list[SSAValue] = []
    dot_value = None

    def add(op):
        block.add_op(op)
        return op.results[0]

    for index, layer in enumerate(form.layers):
        if form.dot is not None and form.dot[0] == index:
            dot_value = add(graph.LinearOp(h, args[form.dot[1]], args[form.dot[2]],
                                           TensorType(element, [form.rows, 1])))
        a = h
        if layer["cat"] is not None:
            side = args[0] if layer["cat"][0] == "skip" else args[layer["cat"][0]]
            cols = layer["cat"][1] + form.widths[index]
            a = add(graph.ConcatOp([side, h], -1, TensorType(element, [form.rows, cols])))
        h = add(graph.LinearOp(a, args[layer["w"]], args[layer["b"]],
                               TensorType(element, [form.rows, form.widths[index + 1]])))
        if layer["relu"]:
            h = add(graph.ReluOp(h))
    if form.norm is not None:
        h = add(graph.LayerNormOp(h, args[form.norm[0]], args[form.norm[1]], form.norm[2]))
    results.append(h)
    if dot_value is not None:
        results.append(dot_value)
    block.add_op(func.ReturnOp(*results))
    fn = func.FuncOp("piece", (types, [r.type for r in results]), Region(block))
    return ModuleOp([fn])


__all__ = ["PATTERN", "Adapter", "StackForm", "match_stack_at", "stack_function"]
