"""torch.fx graphs matched against the pattern library, and each match as a graph-level piece.

    find_pieces(gm, example_inputs) -> [Piece]
    graph_function(piece) -> builtin.module holding the piece as one func.func of graph ops

Patterns (each intermediate used once, so the piece can be replaced whole):

    Linear→act→Linear   linear(act(linear(x, w1[, b1])), w2[, b2]), act: GeLU, ReLU, SiLU or none
                        (GPT-2/3's MLP; a NeRF MLP's layers pair up the same way)
    SwiGLU MLP          linear(silu(linear(x, wg)) * linear(x, wu), wd)   (LLaMA)
    Attention           q, k, v = linear(x, w_qkv[, b]).split(C, dim=-1)
                        linear(softmax(S, dim=-1) @ v, w_out[, b]), S = q @ k.transpose(-2, -1)
                        or S scaled: S * c, c * S, S / c (c a python number: 1 / math.sqrt(d),
                        d ** 0.5, ...; graph.softmax's scale) (one head over one sequence: x is
                        tokens x C)
    Conv→ReLU→Conv      conv2d(relu(conv2d(x, w1[, b1])), w2[, b2])  (ReLU optional; groups 1,
                        dilation 1: graph.conv2d's; a ResNet/VGG pair of 3x3 convs)

Layout: torch's convs are NCHW with K x C x R x S filters, the conv kernel channels last. A
conv piece's graph function takes NHWC activations and K x R x S x C filters (`graph.conv2d`
layout "NHWC") and returns NHWC; `Piece.layouts` are the permutations torch applies to its
inputs at the boundary and `Piece.out_layout` the one back (ops.Relayout runs them).

Nodes are read in the forms both tracers produce: `call_module` of nn.Linear / nn.Conv2d /
nn.GELU / nn.SiLU / nn.ReLU (torch.fx.symbolic_trace) and `call_function` of F.linear,
F.conv2d, F.gelu, F.silu, F.relu, operator.mul (Dynamo, whose parameters are placeholders or
get_attr nodes). A match the kernels cannot take (ReLU, an exact GeLU, float32, a width that is
not a multiple of 64, a 5x5 or strided conv) is still a piece: graph-to-stages says why, and
the piece stays with torch. So is one the graph level cannot express (attention scaled by a
tensor, or by a number that is not positive: `Piece.refusal`).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp, TensorType
from xdsl.ir import Block, Region, SSAValue

from tilesync.dialects import graph

ACTIVATIONS = ("gelu", "gelu_tanh", "silu", "relu")
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)
"""Permutations of an NCHW activation (and a K x C x R x S filter) to channels last, and of an
NHWC result back."""


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    dtype: Any  # torch.dtype
    device: Any  # torch.device or None


@dataclass
class Piece:
    """One match: its fx nodes, its inputs (fx nodes, or parameter paths of call_module
    Linears), and its ops as a small program over them."""

    pattern: str
    output: Any  # the fx node whose value the piece computes
    nodes: list[Any]  # every fx node the piece replaces, in graph order
    inputs: list[Any] = field(default_factory=list)  # fx Node or "path.to.weight"
    infos: list[TensorInfo] = field(default_factory=list)
    ops: list[tuple] = field(default_factory=list)  # ("linear", x, w, b) etc; operands: refs
    out_info: TensorInfo | None = None
    layouts: list[tuple[int, ...] | None] = field(default_factory=list)
    """Per input, the permutation torch applies before the graph function takes it (none: as
    it is); empty where the piece takes every input as it is."""
    out_layout: tuple[int, ...] | None = None  # the permutation of the result back
    refusal: str | None = None
    """Why the graph level cannot express the match (it stays with torch), else None."""
    more_outputs: list[Any] = field(default_factory=list)
    """fx nodes the piece also computes (an MLP stack's dot head), after `output`."""
    more_infos: list[TensorInfo] = field(default_factory=list)  # theirs
    results: list[int] = field(default_factory=lambda: [-1])
    """The op of each output in `ops` (one per `outputs`)."""
    stack: Any = None  # an MLP stack's StackForm (stack.py): its widths and boundary adapters

    @property
    def outputs(self) -> list[Any]:
        return [self.output, *self.more_outputs]

    @property
    def out_infos(self) -> list[TensorInfo]:
        assert self.out_info is not None
        return [self.out_info, *self.more_infos]

    @property
    def description(self) -> str:
        if self.stack is not None:
            return self.stack.description(self.infos[0].dtype)
        x = self.infos[0]
        if self.layouts:  # a conv chain: N x C x H x W -> K1 -> K2
            k1 = self.infos[self.ops[0][2][1]].shape[0]
            out = self.out_info.shape[1] if self.out_info else "?"
            return (f"{self.pattern} [{'x'.join(map(str, x.shape))}, {x.shape[1]} -> {k1} -> "
                    f"{out} channels, {_dtype_name(x.dtype)}]")
        rows = 1
        for d in x.shape[:-1]:
            rows *= d
        hidden = self.infos[self.ops[0][2][1]].shape[0]
        out = self.out_info.shape[-1] if self.out_info else "?"
        scale = next((op[2] for op in self.ops if op[0] == "softmax"), 1.0)
        scaled = f", scale {scale:.6g}" if scale not in (1.0, None) else ""
        return (f"{self.pattern} [{rows} rows, {x.shape[-1]} -> {hidden} -> {out}, "
                f"{_dtype_name(x.dtype)}{scaled}]")


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


# ---------------------------------------------------------------------------------------------
# Reading fx nodes
# ---------------------------------------------------------------------------------------------


def _module(gm: Any, node: Any) -> Any:
    if node.op != "call_module":
        return None
    try:
        return gm.get_submodule(node.target)
    except AttributeError:
        return None


def _functions() -> dict[str, tuple]:
    import torch
    import torch.nn.functional as F

    return {
        "linear": (F.linear, torch._C._nn.linear),
        "conv2d": (F.conv2d, torch.conv2d),
        "gelu": (F.gelu, torch._C._nn.gelu),
        "silu": (F.silu, torch.nn.functional.silu),
        "relu": (F.relu, torch.relu, torch.nn.functional.relu),
        "mul": (operator.mul, torch.mul),
        "div": (operator.truediv, torch.div),
        "true_divide": (torch.true_divide,),
        "matmul": (operator.matmul, torch.matmul),
        "softmax": (F.softmax, torch.softmax),
        "split": (torch.split,),
        "transpose": (torch.transpose,),
        "cat": (torch.cat, torch.concat, torch.concatenate),
        "layer_norm": (F.layer_norm, torch.layer_norm),
    }


def _arg(node: Any, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def linear_parts(gm: Any, node: Any) -> tuple[Any, Any, Any] | None:
    """(input node, weight ref, bias ref or None) of a linear node, else None."""
    import torch

    module = _module(gm, node)
    if isinstance(module, torch.nn.Linear):
        bias = f"{node.target}.bias" if module.bias is not None else None
        return node.args[0], f"{node.target}.weight", bias
    if node.op == "call_function" and node.target in _functions()["linear"]:
        return _arg(node, 0, "input"), _arg(node, 1, "weight"), _arg(node, 2, "bias")
    return None


def layer_norm_parts(gm: Any, node: Any) -> tuple[Any, Any, Any, tuple, float] | None:
    """(input node, weight ref, bias ref, normalized shape, eps) of a layer norm node with its
    affine weight and bias (nn.LayerNorm or F.layer_norm), else None."""
    import torch

    module = _module(gm, node)
    if isinstance(module, torch.nn.LayerNorm):
        if module.weight is None or module.bias is None:
            return None
        return (node.args[0], f"{node.target}.weight", f"{node.target}.bias",
                tuple(module.normalized_shape), float(module.eps))
    if node.op == "call_function" and node.target in _functions()["layer_norm"]:
        shape, eps = _arg(node, 1, "normalized_shape"), _arg(node, 4, "eps", 1e-5)
        weight, bias = _arg(node, 2, "weight"), _arg(node, 3, "bias")
        if weight is None or bias is None or not _number(eps) or \
                not isinstance(shape, tuple | list) or not all(isinstance(d, int) for d in shape):
            return None
        return _arg(node, 0, "input"), weight, bias, tuple(shape), float(eps)
    return None


def _pair(value: Any) -> tuple[int, int] | None:
    if isinstance(value, int):
        return (value, value)
    if isinstance(value, tuple | list) and len(value) == 2 and \
            all(isinstance(v, int) for v in value):
        return (value[0], value[1])
    return None  # padding="same" / "valid", or a traced value: no graph.conv2d


def conv_parts(gm: Any, node: Any) -> tuple[Any, Any, Any, tuple[int, int], tuple[int, int]] \
        | None:
    """(input node, weight ref, bias ref or None, stride, padding) of a 2-D convolution that
    graph.conv2d expresses (groups 1, dilation 1, zero padding given as numbers), else None."""
    import torch

    module = _module(gm, node)
    if isinstance(module, torch.nn.Conv2d):
        if module.groups != 1 or module.padding_mode != "zeros":
            return None
        bias = f"{node.target}.bias" if module.bias is not None else None
        x, weight = node.args[0], f"{node.target}.weight"
        stride, padding, dilation = module.stride, module.padding, module.dilation
    elif node.op == "call_function" and node.target in _functions()["conv2d"]:
        x, weight, bias = _arg(node, 0, "input"), _arg(node, 1, "weight"), _arg(node, 2, "bias")
        stride, padding = _arg(node, 3, "stride", 1), _arg(node, 4, "padding", 0)
        dilation = _arg(node, 5, "dilation", 1)
        if _arg(node, 6, "groups", 1) != 1:
            return None
    else:
        return None
    stride, padding = _pair(stride), _pair(padding)
    if stride is None or padding is None or _pair(dilation) != (1, 1):
        return None
    return x, weight, bias, stride, padding


def activation(gm: Any, node: Any) -> tuple[str, Any] | None:
    """(kind in ACTIVATIONS, input node) of an activation node, else None."""
    import torch

    module = _module(gm, node)
    fns = _functions()
    if isinstance(module, torch.nn.GELU):
        return ("gelu_tanh" if module.approximate == "tanh" else "gelu"), node.args[0]
    if isinstance(module, torch.nn.SiLU):
        return "silu", node.args[0]
    if isinstance(module, torch.nn.ReLU):
        return "relu", node.args[0]
    if node.op == "call_function":
        if node.target in fns["gelu"]:
            tanh = _arg(node, 1, "approximate", "none") == "tanh"
            return ("gelu_tanh" if tanh else "gelu"), _arg(node, 0, "input")
        if node.target in fns["silu"]:
            return "silu", _arg(node, 0, "input")
        if node.target in fns["relu"]:
            return "relu", _arg(node, 0, "input")
    if node.op == "call_method" and node.target == "relu":
        return "relu", node.args[0]
    return None


def is_mul(node: Any) -> bool:
    return (node.op == "call_function" and node.target in _functions()["mul"]
            and len(node.args) == 2) or (node.op == "call_method" and node.target == "mul")


def _is_node(value: Any) -> bool:
    return hasattr(value, "op") and hasattr(value, "users")


def _single_use(node: Any) -> bool:
    return len(node.users) == 1


def tensor_info(gm: Any, ref: Any) -> TensorInfo | None:
    """Shape, dtype, device of an fx node (its meta from Dynamo or ShapeProp) or a parameter."""
    if isinstance(ref, str):
        tensor = gm.get_parameter(ref)
        return TensorInfo(tuple(tensor.shape), tensor.dtype, tensor.device)
    meta = ref.meta
    if "tilesync_info" in meta:
        return meta["tilesync_info"]
    value = meta.get("example_value", meta.get("val"))
    if value is not None and hasattr(value, "shape"):
        return TensorInfo(tuple(value.shape), value.dtype, getattr(value, "device", None))
    tm = meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape"):
        return TensorInfo(tuple(tm.shape), tm.dtype, meta.get("tilesync_device"))
    return None


def _call(node: Any, kind: str) -> bool:
    """Whether `node` calls torch's `kind` as a function or a tensor method."""
    return (node.op == "call_function" and node.target in _functions()[kind]) or \
        (node.op == "call_method" and node.target == kind)


def _last_dim(dim: Any, rank: int) -> bool:
    return dim in (-1, rank - 1)


def _transposed(node: Any) -> Any:
    """x of x.transpose(-2, -1) (or of x.t(), x.mT), else None."""
    if node.op == "call_method" and node.target in ("t", "mT"):
        return node.args[0]
    if _call(node, "transpose") and len(node.args) == 3 and \
            {node.args[1], node.args[2]} in ({-2, -1}, {0, 1}):
        return node.args[0]
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def scaled_matmul(node: Any) -> tuple[Any, Any, bool] | None:
    """(the matmul node, the factor, whether it divides) of matmul * c, c * matmul or
    matmul / c, else None. The factor is as written: a number, or an fx node (a tensor)."""
    if _call(node, "mul") and len(node.args) + len(node.kwargs) == 2:
        pairs = [(_arg(node, 0, "input"), _arg(node, 1, "other"))]
        pairs.append(pairs[0][::-1])
        divides = False
    elif (_call(node, "div") or _call(node, "true_divide")) and \
            _arg(node, 2, "rounding_mode") is None:  # a rounded quotient is no scale
        pairs, divides = [(_arg(node, 0, "input"), _arg(node, 1, "other"))], True
    else:
        return None
    for x, factor in pairs:
        if _is_node(x) and _call(x, "matmul"):
            return x, factor, divides
    return None


def _softmax_scale(factor: Any, divides: bool) -> tuple[float | None, str | None]:
    """(graph.softmax's scale, None) for a factor it takes, else (None, why not)."""
    if not _number(factor):
        return None, ("attention's scores are scaled by a tensor (or a value computed in the "
                      "graph); the softmax kernel takes a python number, a constant of the piece")
    if divides:
        scale = 1 / factor if factor != 0 else math.inf
    else:
        scale = float(factor)
    if not (math.isfinite(scale) and scale > 0):
        return None, (f"attention's scale {scale} is not positive and finite: the softmax "
                      "kernel scales the scores after subtracting their row maximum")
    return float(scale), None


# ---------------------------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------------------------


def _match_attention_at(gm: Any, last: Any, parts: tuple[Any, Any, Any]) -> Piece | None:
    """The attention piece whose output linear is `last` (its parts given), or None."""
    context, w_out, b_out = parts
    if not (_is_node(context) and _single_use(context) and _call(context, "matmul")):
        return None
    probs, v = context.args[:2]
    if not (_is_node(probs) and _single_use(probs) and _call(probs, "softmax")):
        return None
    if not _last_dim(_arg(probs, 1, "dim"), 2):
        return None
    scores = _arg(probs, 0, "input")
    if not (_is_node(scores) and _single_use(scores)):
        return None
    scale: float | None = 1.0
    refusal = scaling = divisor = None
    scaled = scaled_matmul(scores)
    if scaled is not None:  # softmax(S · c): scores is S's one use
        scaling, (scores, factor, divides) = scores, scaled
        if not _single_use(scores):
            return None
        scale, refusal = _softmax_scale(factor, divides)
        divisor = factor if divides else None
    if not _call(scores, "matmul"):
        return None
    q, k_t = scores.args[:2]
    k = _transposed(k_t) if _is_node(k_t) and _single_use(k_t) else None
    items = [q, k, v]
    if not all(_is_node(n) and _single_use(n) and n.op == "call_function"
               and n.target is operator.getitem for n in items):
        return None
    split = q.args[0]
    if any(n.args[0] is not split for n in items) or [n.args[1] for n in items] != [0, 1, 2]:
        return None
    if not (_call(split, "split") and len(split.users) == 3
            and _last_dim(_arg(split, 2, "dim", 0), 2)):
        return None
    qkv = _arg(split, 0, "tensor") if split.op == "call_function" else split.args[0]
    qkv_parts = linear_parts(gm, qkv) if _is_node(qkv) and _single_use(qkv) else None
    if qkv_parts is None:
        return None
    x, w_qkv, b_qkv = qkv_parts
    info = tensor_info(gm, qkv)
    # one sequence (batched q · kᵀ has no graph-level form) split in three equal widths
    if info is None or len(info.shape) != 2 or info.shape[-1] % 3 or \
            _arg(split, 1, "split_size") not in (info.shape[-1] // 3, [info.shape[-1] // 3] * 3):
        return None
    piece = Piece("Attention", last, [qkv, split, q, k, v, k_t, scores] +
                  ([scaling] if scaling is not None else []) + [probs, context, last],
                  refusal=refusal)
    refs = [x, w_qkv] + ([b_qkv] if b_qkv is not None else []) + [w_out] + \
        ([b_out] if b_out is not None else [])
    index = {id(r): i for i, r in enumerate(refs)}
    piece.inputs = refs
    # values: 0 qkv, 1-3 q k v (the split's results), 4 q·kᵀ, 5 softmax, 6 · v, 7 out
    piece.ops = [("linear", ("in", 0), ("in", 1), ("in", 2) if b_qkv is not None else None),
                 ("split3", ("op", 0)),
                 ("linear", ("op", 1), ("op", 2), None),
                 # scale: None where refused; torch's path divides by the divisor as written
                 ("softmax", ("op", 4), scale, divisor),
                 ("matmul", ("op", 5), ("op", 3)),
                 ("linear", ("op", 6), ("in", index[id(w_out)]),
                  ("in", index[id(b_out)]) if b_out is not None else None)]
    return piece


def _match_conv_chain_at(gm: Any, last: Any) -> Piece | None:
    """conv2d(relu?(conv2d(x, w1[, b1])), w2[, b2]) ending at `last`, or None."""
    second = conv_parts(gm, last)
    if second is None:
        return None
    middle, w2, b2, stride2, padding2 = second
    if not _is_node(middle) or not _single_use(middle):
        return None
    act = activation(gm, middle)
    relu = None
    if act is not None:
        if act[0] != "relu" or not _is_node(act[1]) or not _single_use(act[1]):
            return None
        relu, middle = middle, act[1]
    first = conv_parts(gm, middle)
    if first is None:
        return None
    x, w1, b1, stride1, padding1 = first
    piece = Piece("Conv→ReLU→Conv" if relu is not None else "Conv→Conv", last,
                  [middle] + ([relu] if relu is not None else []) + [last])
    refs = [x, w1] + ([b1] if b1 is not None else []) + [w2] + ([b2] if b2 is not None else [])
    index = {id(r): i for i, r in enumerate(refs)}
    ops: list[tuple] = [("conv2d", ("in", 0), ("in", 1),
                         ("in", index[id(b1)]) if b1 is not None else None, stride1, padding1)]
    if relu is not None:
        ops.append(("relu", ("op", 0)))
    ops.append(("conv2d", ("op", len(ops) - 1), ("in", index[id(w2)]),
                ("in", index[id(b2)]) if b2 is not None else None, stride2, padding2))
    piece.ops, piece.inputs = ops, refs
    # activations and filters channels last (biases as they are); the result back to NCHW
    piece.layouts = [TO_NHWC if i in (0, 1, index[id(w2)]) else None
                     for i in range(len(refs))]
    piece.out_layout = TO_NCHW
    return piece


def _match_at(gm: Any, last: Any) -> Piece | None:
    """The piece whose final linear (or conv) is `last`, or None."""
    if conv_parts(gm, last) is not None:
        return _match_conv_chain_at(gm, last)
    parts = linear_parts(gm, last)
    if parts is None:
        return None
    hidden, w2, b2 = parts
    if not _is_node(hidden) or not _single_use(hidden):
        return None
    if _call(hidden, "matmul"):
        return _match_attention_at(gm, last, parts)
    if is_mul(hidden):
        sides = [a for a in hidden.args[:2] if _is_node(a)]
        if len(sides) != 2:
            return None
        acts = [activation(gm, s) for s in sides]
        if [a is not None and a[0] == "silu" for a in acts].count(True) != 1:
            return None
        silu_index = 0 if acts[0] is not None and acts[0][0] == "silu" else 1
        silu, up = sides[silu_index], sides[1 - silu_index]
        gate = acts[silu_index][1]
        gate_parts = linear_parts(gm, gate) if _is_node(gate) else None
        up_parts = linear_parts(gm, up)
        if gate_parts is None or up_parts is None or gate_parts[0] is not up_parts[0]:
            return None
        if not all(_single_use(n) for n in (silu, gate, up)) or gate_parts[2] or up_parts[2]:
            return None
        x, wg, wu = gate_parts[0], gate_parts[1], up_parts[1]
        piece = Piece("SwiGLU MLP", last, [gate, up, silu, hidden, last])
        refs = [x, wg, wu, w2]
        piece.ops = [("linear", ("in", 0), ("in", 1), None), ("linear", ("in", 0), ("in", 2), None),
                     ("silu", ("op", 0)), ("mul", ("op", 2), ("op", 1)),
                     ("linear", ("op", 3), ("in", 3), None)]
        piece.inputs = refs
        return piece
    act = activation(gm, hidden)
    first = hidden
    kind = None
    if act is not None:
        kind, first = act
        if not _is_node(first) or not _single_use(first):
            return None
    first_parts = linear_parts(gm, first)
    if first_parts is None:
        return None
    x, w1, b1 = first_parts
    name = {None: "Linear→Linear", "gelu_tanh": "Linear→GeLU→Linear", "gelu": "Linear→GeLU→Linear",
            "silu": "Linear→SiLU→Linear", "relu": "Linear→ReLU→Linear"}[kind]
    piece = Piece(name, last, [first] + ([hidden] if kind else []) + [last])
    refs = [x, w1] + ([b1] if b1 is not None else []) + [w2] + ([b2] if b2 is not None else [])
    index = {id(r): i for i, r in enumerate(refs)}
    ops: list[tuple] = [("linear", ("in", 0), ("in", 1),
                         ("in", index[id(b1)]) if b1 is not None else None)]
    if kind:
        ops.append((kind, ("op", 0)))
    ops.append(("linear", ("op", len(ops) - 1), ("in", index[id(w2)]),
                ("in", index[id(b2)]) if b2 is not None else None))
    piece.ops = ops
    piece.inputs = refs
    return piece


def find_pieces(gm: Any) -> list[Piece]:
    """Every match in `gm`, none overlapping, in graph order: MLP stacks first (stack.py, from
    their first layer on), then the other patterns (later linears first, so layers that are no
    stack pair from their output back). Nodes need shape meta (Dynamo's, or ShapeProp's)."""
    from tilesync.frontend.torch.stack import match_stack_at

    claimed: set[int] = set()
    pieces = []
    for node in gm.graph.nodes:
        if id(node) in claimed:
            continue
        piece = match_stack_at(gm, node)
        if piece is not None and piece.more_outputs and insertion_point(gm, piece) is None:
            # the dot head's output is read before an input of a later layer is computed:
            # the stack up to the dot head's input, without it
            piece = match_stack_at(gm, node, dot_head=False)
        if piece is None or any(id(n) in claimed for n in piece.nodes) or \
                insertion_point(gm, piece) is None:
            continue
        claimed.update(id(n) for n in piece.nodes)
        pieces.append(piece)
    for node in reversed(list(gm.graph.nodes)):
        if id(node) in claimed:
            continue
        piece = _match_at(gm, node)
        if piece is None or any(id(n) in claimed for n in piece.nodes):
            continue
        infos = [tensor_info(gm, r) if (isinstance(r, str) or _is_node(r)) else None
                 for r in piece.inputs]
        out = tensor_info(gm, piece.output)
        if any(i is None for i in infos) or out is None:
            continue
        piece.infos = infos  # type: ignore[assignment]
        piece.out_info = out
        claimed.update(id(n) for n in piece.nodes)
        pieces.append(piece)
    order = {id(n): i for i, n in enumerate(gm.graph.nodes)}
    return sorted(pieces, key=lambda p: order[id(p.output)])


def insertion_point(gm: Any, piece: Piece) -> Any:
    """The node before which the piece's call goes: the first node outside it that reads one
    of its outputs (or the output itself, read by none); None where one of the piece's inputs
    is computed only after that (no single place computes every output in time)."""
    order = {id(n): i for i, n in enumerate(gm.graph.nodes)}
    inside = {id(n) for n in piece.nodes}
    readers = [u for out in piece.outputs for u in out.users if id(u) not in inside]
    anchor = min(readers, key=lambda n: order[id(n)]) if readers else piece.output
    if any(_is_node(r) and order[id(r)] >= order[id(anchor)] for r in piece.inputs):
        return None
    return anchor


# ---------------------------------------------------------------------------------------------
# The piece at the graph level
# ---------------------------------------------------------------------------------------------


class UnsupportedPiece(ValueError):
    """A piece the graph level cannot express (the message says why)."""


class UnsupportedTensor(UnsupportedPiece):
    """A piece's tensor the graph level has no type for (float64, int8, ...)."""


def element_type(dtype: Any):
    import torch

    types = {torch.float16: Float16Type, torch.bfloat16: BFloat16Type,
             torch.float32: Float32Type}
    if dtype not in types:
        raise UnsupportedTensor(f"{_dtype_name(dtype)} tensors: tilesync takes float16 or "
                                "bfloat16 (float32 reaches the graph level and stays in torch)")
    return types[dtype]()


def graph_function(piece: Piece, names: bool = True) -> ModuleOp:
    """builtin.module { func.func @piece(inputs...) -> out { graph ops } }; `names`: the
    arguments named after the fx nodes (without: the text is the same whichever tracer, the
    cache's key); UnsupportedPiece where it cannot be (`Piece.refusal`, a tensor's type)."""
    if piece.refusal is not None:
        raise UnsupportedPiece(piece.refusal)
    if piece.stack is not None:
        from tilesync.frontend.torch.stack import stack_function

        return stack_function(piece)
    arg_types = [TensorType(element_type(i.dtype), _permuted(i.shape, layout))
                 for i, layout in zip(piece.infos, piece.layouts or [None] * len(piece.infos),
                                      strict=True)]
    block = Block(arg_types=arg_types)
    for value, ref in zip(block.args, piece.inputs, strict=True):
        value.name_hint = _hint(ref) if names else None
    values: list[SSAValue] = []

    def get(ref: tuple | None) -> SSAValue | None:
        if ref is None:
            return None
        return block.args[ref[1]] if ref[0] == "in" else values[ref[1]]

    element = arg_types[0].element_type
    for op in piece.ops:
        kind = op[0]
        if kind == "linear":
            x, w, b = get(op[1]), get(op[2]), get(op[3])
            assert x is not None and w is not None
            xs = x.type.get_shape()  # type: ignore[attr-defined]
            if len(xs) < 2:
                raise UnsupportedPiece(f"a Linear's input of shape {list(xs)} has no row "
                                       f"dimension (the GEMMs take rows x {xs[-1]})")
            n = w.type.get_shape()[0]  # type: ignore[attr-defined]
            new = graph.LinearOp(x, w, b, TensorType(element, [*xs[:-1], n]))
        elif kind == "conv2d":  # channels last (see the module docstring)
            x, w, b = get(op[1]), get(op[2]), get(op[3])
            assert x is not None and w is not None
            (n, h, wd, _), (k, r, s, _) = x.type.get_shape(), w.type.get_shape()  # type: ignore
            (sh, sw), (ph, pw) = op[4], op[5]
            shape = [n, (h + 2 * ph - r) // sh + 1, (wd + 2 * pw - s) // sw + 1, k]
            new = graph.Conv2dOp(x, w, b, op[4], op[5], TensorType(element, shape),
                                 layout="NHWC")
        elif kind in ("gelu", "gelu_tanh"):
            new = graph.GeluOp(get(op[1]), "tanh" if kind == "gelu_tanh" else "none")
        elif kind == "silu":
            new = graph.SiluOp(get(op[1]))
        elif kind == "relu":
            new = graph.ReluOp(get(op[1]))
        elif kind == "mul":
            new = graph.MulOp(get(op[1]), get(op[2]))
        elif kind == "softmax":
            new = graph.SoftmaxOp(get(op[1]), -1, op[2])
        elif kind == "matmul":
            a, b = get(op[1]), get(op[2])
            assert a is not None and b is not None
            shape = [*a.type.get_shape()[:-1], b.type.get_shape()[-1]]  # type: ignore
            new = graph.MatmulOp(a, b, TensorType(element, shape))
        elif kind == "split3":
            x = get(op[1])
            assert x is not None
            shape = list(x.type.get_shape())  # type: ignore[attr-defined]
            part = TensorType(element, [*shape[:-1], shape[-1] // 3])
            new = graph.SplitOp(x, -1, [part] * 3)
        else:  # pragma: no cover - find_pieces builds no other op
            raise AssertionError(kind)
        block.add_op(new)
        values.extend(new.results)
    block.add_op(func.ReturnOp(values[-1]))
    fn = func.FuncOp("piece", (arg_types, [values[-1].type]), Region(block))
    return ModuleOp([fn])


def _permuted(shape: tuple[int, ...], layout: tuple[int, ...] | None) -> list[int]:
    return list(shape) if layout is None else [shape[d] for d in layout]


def _hint(ref: Any) -> str | None:
    name = ref if isinstance(ref, str) else getattr(ref, "name", None)
    cleaned = "".join(c if c.isalnum() else "_" for c in name or "").strip("_")
    return cleaned.lstrip("0123456789_") or None


__all__ = ["ACTIVATIONS", "TO_NCHW", "TO_NHWC", "Piece", "TensorInfo", "UnsupportedPiece",
           "UnsupportedTensor", "conv_parts", "element_type", "find_pieces", "graph_function",
           "insertion_point", "scaled_matmul", "tensor_info"]
