"""torch.fx graphs matched against the pattern library, and each match as a graph-level piece.

    find_pieces(gm, example_inputs) -> [Piece]
    graph_function(piece) -> builtin.module holding the piece as one func.func of graph ops

Patterns (each intermediate used once, so the piece can be replaced whole):

    Linear→act→Linear   linear(act(linear(x, w1[, b1])), w2[, b2]), act: GeLU, ReLU, SiLU or none
                        (GPT-2/3's MLP; a NeRF MLP's layers pair up the same way)
    (a linear)          nn.Linear, F.linear, or Hugging Face's Conv1D (GPT-2's c_fc, c_proj,
                        c_attn): x.view(-1, K), torch.addmm(b, rows, w) of a K x N parameter w
                        (beta, alpha 1), .view back to x's leading dimensions x N; in the
                        piece linear(x, transpose(w, [1, 0]), b), so an MLP or attention
                        written with Conv1D is the same piece as with nn.Linear
    SwiGLU MLP          linear(silu(linear(x, wg)) * linear(x, wu), wd)   (LLaMA)
    Attention           q, k, v = linear(x, w_qkv[, b]).split(C, dim=-1), x one sequence
                        (T x E) or a batch (B x T x E, B = 1 too); linear(merge(softmax(S,
                        dim=-1) @ v), w_out[, b]), S = q @ k.transpose(-2, -1) or S scaled (S * c,
                        c * S, S / c; c a python number: 1 / math.sqrt(d), d ** 0.5, ..., or
                        one computed from shapes alone, 1 / math.sqrt(q.size(-1)) or
                        q.shape[-1] ** -0.5, folded to its number for the traced shapes;
                        graph.softmax's scale) and/or masked (S.masked_fill(mask, -inf), the
                        causal mask; graph.softmax's causal), in either order; or the three as
                        F.scaled_dot_product_attention(q, k, v[, is_causal=, scale=]). Heads:
                        q, k and v each .view([B,] T, H, D).transpose(-3, -2) (or .permute) to
                        [B x] H x T x D, merge(o) its transpose back [.contiguous()] .view (or
                        reshape) as [B x] T x C (graph.reshape, graph.transpose); one head: q,
                        k, v as they are, no merge
    Conv→ReLU→Conv      conv2d(relu(conv2d(x, w1[, b1])), w2[, b2])  (ReLU optional; groups 1,
                        dilation 1: graph.conv2d's; a ResNet/VGG pair of 3x3 convs)

Layout: torch's convs are NCHW with K x C x R x S filters, the conv kernel channels last. A
conv piece's graph function takes NHWC activations and K x R x S x C filters (`graph.conv2d`
layout "NHWC") and returns NHWC; `Piece.layouts` are the permutations torch applies to its
inputs at the boundary and `Piece.out_layout` the one back (ops.Relayout runs them).

Nodes are read in the forms both tracers produce: `call_module` of nn.Linear / nn.Conv2d /
nn.GELU / nn.SiLU / nn.ReLU (torch.fx.symbolic_trace) and `call_function` of F.linear,
F.conv2d, F.gelu, F.silu, F.relu, operator.mul (Dynamo, whose parameters are placeholders or
get_attr nodes). Conv1D is traced through (it is no leaf module): under symbolic_trace its
sizes are nodes reading x.size() (they go with the piece), under Dynamo constants; either way
the views' shapes are checked against the nodes' recorded ones.

A match the kernels cannot take (ReLU, an exact GeLU, float32, a width that is not a multiple
of 64, a 5x5 or strided conv) is still a piece: graph-to-stages says why, and the piece stays
with torch. So is one the graph level cannot express (attention scaled by a tensor or a size
Dynamo keeps dynamic, or by a number that is not positive; masked by anything but the causal
mask; an attn_mask or dropout of scaled_dot_product_attention: `Piece.refusal`).

nn.Identity and eval-mode dropout are no computation: they are left out of the graph the
pieces are matched on (compiler.without_identities), so Linear → GeLU → Dropout → Linear is an
MLP; a dropout that drops (in training) is an op like any other, and the MLP around it no match.

A mask is read as causal only where it provably is: computed from constants and module buffers
alone (ones, tril/triu, ~ or logical_not, == 0, .bool(), slices; under symbolic_trace these
fold into a constant, under Dynamo a buffer is a placeholder whose source is the module's
`_buffers`), its value the mask of key j > query i, the fill -inf. A mask computed from a model
input, another diagonal, or -1e4 for -inf is a refusal. Shapes come from the nodes' recorded
meta (under symbolic_trace a view's sizes are fx nodes read from x.shape).
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
from tilesync.dialects.graph import HEADS_PERM

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
    shape_constants: bool = False
    """Its ops hold a number read from the examples' shapes (an attention scale of
    q.size(-1)): torch's path computes the piece for inputs of those shapes alone."""

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
        hidden = _first_linear_width(self.ops, self.infos)
        out = self.out_info.shape[-1] if self.out_info else "?"
        scale, causal = _softmax_form(self.ops)
        scaled = f", scale {scale:.6g}" if scale not in (1.0, None) else ""
        heads = next((op[2][-2] for op in self.ops if op[0] == "reshape"), None)
        if self.pattern == "Attention" and (len(x.shape) != 2 or heads is not None or causal):
            # heads, a batch or a mask: [B x] T tokens, H heads of D
            count = heads or 1
            return (f"{self.pattern} [{' x '.join(map(str, x.shape[:-1]))} tokens, {count} "
                    f"head{'s' if count != 1 else ''} of {hidden // 3 // count}, "
                    f"{x.shape[-1]} -> {hidden} -> {out}, {_dtype_name(x.dtype)}{scaled}"
                    f"{', causal' if causal else ''}]")
        return (f"{self.pattern} [{rows} rows, {x.shape[-1]} -> {hidden} -> {out}, "
                f"{_dtype_name(x.dtype)}{scaled}]")


def _first_linear_width(ops: list[tuple], infos: list[TensorInfo]) -> int:
    """N of a piece's first linear: its weight's rows (N x K), or its columns where the piece
    transposes it first (a K x N Conv1D weight: its transpose is the op before)."""
    linear = next(op for op in ops if op[0] == "linear")
    kind, index = linear[2]
    if kind == "in":
        return infos[index].shape[0]
    transpose = _value_op(ops, index)
    assert transpose[0] == "transpose" and transpose[1][0] == "in", transpose
    return infos[transpose[1][1]].shape[1]


def _value_op(ops: list[tuple], index: int) -> tuple:
    """The op of a piece's value `index` (values numbered as _Program numbers them)."""
    first = 0
    for op in ops:
        first += 3 if op[0] == "split3" else 1
        if index < first:
            return op
    raise IndexError(index)


def _softmax_form(ops: list[tuple]) -> tuple[float | None, bool]:
    """(scale, causal) of a piece's softmax (1.0 and False where it has none)."""
    for op in ops:
        if op[0] == "softmax":
            return op[2], op[4]
        if op[0] == "sdpa":
            return op[4], op[5]
    return 1.0, False


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
        "permute": (torch.permute,),
        "reshape": (torch.reshape, torch.flatten, torch.unflatten),
        "sdpa": (F.scaled_dot_product_attention,),  # torch._C._nn's, as Dynamo records it
        "masked_fill": (torch.masked_fill,),
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


@dataclass(frozen=True)
class LinearForm:
    """A linear layer as torch wrote it: x · wᵀ + b of nn.Linear or F.linear (one node), or
    Hugging Face's Conv1D (its nodes: x's rows viewed, addmm, the view back, the sizes)."""

    x: Any
    weight: Any  # a ref: N x K, or K x N where `transposed`
    bias: Any  # a ref or None
    nodes: tuple[Any, ...]  # the fx nodes it is made of; the form's output among them
    transposed: bool = False
    """The weight is stored in x out (K x N, Conv1D's): the piece transposes it."""

    def only_reads(self, node: Any) -> bool:
        """Whether every user of `node` is one of the form's nodes (for Conv1D: the view of
        its rows and the size reads)."""
        return all(user in self.nodes for user in node.users)


def linear_form(gm: Any, node: Any) -> LinearForm | None:
    """The linear layer whose output is `node`: nn.Linear, F.linear or Conv1D; else None."""
    parts = linear_parts(gm, node)
    if parts is not None:
        return LinearForm(*parts, nodes=(node,))
    return conv1d_form(gm, node)


def _addmm_parts(node: Any) -> tuple[Any, Any, Any] | None:
    """(bias, rows, weight) of torch.addmm(bias, rows, weight) or bias.addmm(rows, weight)
    computing bias + rows · weight as written: beta and alpha 1 (or left out); else None."""
    import torch

    if node.op == "call_function" and node.target is torch.addmm:
        bias = _arg(node, 0, "input")
    elif node.op == "call_method" and node.target == "addmm":
        bias = _arg(node, 0, "self")
    else:
        return None
    if len(node.args) > 3 or set(node.kwargs) - {"input", "self", "mat1", "mat2", "beta",
                                                   "alpha"}:
        return None  # torch's deprecated addmm(beta, input, alpha, ...), or out=
    scales = [node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)]
    if not all(_number(c) and c == 1 for c in scales):
        return None  # beta · bias + alpha · rows · weight is no graph.linear
    return bias, _arg(node, 1, "mat1"), _arg(node, 2, "mat2")


def conv1d_form(gm: Any, node: Any) -> LinearForm | None:
    """Hugging Face's Conv1D ending at `node`, as both tracers record its forward:
    `rows = x.view(-1, K)`, `torch.addmm(bias, rows, weight)` with weight a K x N parameter
    (Conv1D's in x out) and bias N, `.view(size_out)` back to x's leading dimensions x N. The
    views are checked against the shapes the nodes recorded, not read from the size
    arithmetic (`x.size()[:-1] + (nf,)` under symbolic_trace, constants under Dynamo)."""
    addmm = _reshaped(gm, node)
    if addmm is None or not _single_use(addmm):
        return None
    parts = _addmm_parts(addmm)
    if parts is None:
        return None
    bias, rows, weight = parts
    if not (_is_node(rows) and _is_node(bias) and _single_use(rows)):
        return None
    x = _reshaped(gm, rows)
    if x is None or not _is_parameter(gm, weight):
        return None  # a product by an activation is no layer (its transpose is no weight's)
    infos = [tensor_info(gm, n) for n in (x, rows, weight, bias, node)]
    if any(info is None for info in infos) or len(infos[2].shape) != 2:  # type: ignore
        return None
    x_info, rows_info, weight_info, bias_info, out_info = infos
    k, n = weight_info.shape  # type: ignore[union-attr]
    lead = x_info.shape[:-1]  # type: ignore[union-attr]
    if x_info.shape[-1] != k or rows_info.shape != (math.prod(lead), k) or \
            bias_info.shape != (n,) or out_info.shape != (*lead, n):  # type: ignore
        return None
    return LinearForm(x, weight, bias, _with_size_reads(gm, (rows, addmm, node)),
                      transposed=True)


_SIZE_ARITHMETIC = (operator.getitem, operator.add, operator.sub, operator.mul,
                    operator.floordiv, operator.truediv, operator.pow, operator.neg, math.sqrt,
                    getattr)
"""The python functions symbolic_trace records of arithmetic on sizes (x.shape is getattr)."""


def _with_size_reads(gm: Any, nodes: tuple[Any, ...]) -> tuple[Any, ...]:
    """`nodes` and the nodes computing their sizes from tensors' shapes (x.size(), x.size(-1),
    x.shape and python arithmetic on them, what symbolic_trace records of Conv1D's size_out)
    that nothing else reads: they go with the piece (a size read of an intermediate the
    piece replaces has to)."""
    def is_size(n: Any) -> bool:
        if n.op == "call_method":
            return n.target == "size"
        return n.op == "call_function" and n.target in _SIZE_ARITHMETIC and \
            tensor_info(gm, n) is None  # a python value, not a tensor's slice

    found: list[Any] = []
    pending = [a for n in nodes for a in n.all_input_nodes]
    while pending:
        n = pending.pop()
        if n not in found and n not in nodes and is_size(n):
            found.append(n)
            pending += n.all_input_nodes
    inside = set(nodes)
    grown = True
    while grown:  # a size read joins once all its readers are inside
        grown = False
        for n in found:
            if n not in inside and all(user in inside for user in n.users):
                inside.add(n)
                grown = True
    return tuple(n for n in gm.graph.nodes if n in inside)


def _shape_number(gm: Any, node: Any) -> tuple[int | float, list[Any]] | None:
    """(its value, the nodes computing it, inputs first) of a python number computed from
    tensors' shapes alone: x.shape, x.size(d) and _SIZE_ARITHMETIC on them and numbers, as
    symbolic_trace records GPT's 1 / math.sqrt(q.size(-1)). The trace is made for the
    examples' shapes, so it is a constant of it (CompiledModule.fits and Dynamo's guards send
    calls of other shapes elsewhere). None where it reads anything else: a tensor's values,
    a size Dynamo keeps symbolic."""
    def static(value: Any) -> bool:  # torch.SymInt and SymFloat are neither int nor float
        return isinstance(value, int | float) or \
            (isinstance(value, tuple) and all(isinstance(d, int) for d in value))

    values: dict[Any, Any] = {}

    def value_of(arg: Any) -> Any:
        if not _is_node(arg):
            return type(arg)(map(value_of, arg)) if isinstance(arg, tuple | list) else arg
        if arg not in values:
            values[arg] = computed(arg)
        return values[arg]

    def computed(n: Any) -> Any:
        recorded = n.meta.get("example_value")  # Dynamo's: a symbolic size varies by call
        if recorded is not None and not static(recorded):
            raise LookupError(n)
        if (n.op == "call_method" and n.target == "size") or \
                (n.op == "call_function" and n.target is getattr and n.args[1:] == ("shape",)):
            x = n.args[0]
            info = tensor_info(gm, x) if _is_node(x) else None
            if info is None or not static(info.shape):
                raise LookupError(n)
            dim = _arg(n, 1, "dim") if n.op == "call_method" else None
            return info.shape if dim is None else info.shape[dim]
        if n.op == "call_function" and n.target in _SIZE_ARITHMETIC and not n.kwargs:
            return n.target(*map(value_of, n.args))
        raise LookupError(n)  # a tensor: its values

    try:
        value = value_of(node)
    except (LookupError, ArithmeticError, ValueError, TypeError):  # or python refuses the sum
        return None
    return (value, list(values)) if _number(value) else None


def _dynamo_source(node: Any) -> str | None:
    """The source Dynamo recorded for a placeholder (L['self']._modules['fc']._parameters[
    'weight'], ...), else None."""
    arg = node.meta.get("grapharg")
    name = getattr(getattr(arg, "source", None), "name", None)
    name = name() if callable(name) else name
    return name if isinstance(name, str) else None


def _attribute(gm: Any, target: str) -> Any:
    value = gm
    for name in target.split("."):
        value = getattr(value, name, None)
    return value


def _is_parameter(gm: Any, node: Any) -> bool:
    """Whether `node` is a module's parameter (a get_attr naming one, or Dynamo's placeholder
    for one): the same tensor from call to call, which a host may transpose once per version
    of it."""
    import torch

    if not _is_node(node):
        return False
    if node.op == "get_attr":
        return isinstance(_attribute(gm, node.target), torch.nn.Parameter)
    if node.op != "placeholder":
        return False
    source = _dynamo_source(node)
    if source is not None:
        return source.rpartition(".")[2].startswith("_parameters[")
    return isinstance(getattr(node.meta.get("grapharg"), "example", None), torch.nn.Parameter)


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


def _dropouts() -> tuple[tuple[type, ...], dict[Any, tuple[str, bool]]]:
    """torch's dropout modules, and its dropout functions with the name of the argument (at
    index 2) that says whether they drop and its default."""
    import torch
    import torch.nn.functional as F

    nn = torch.nn
    modules = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
               nn.FeatureAlphaDropout)
    functions: dict[Any, tuple[str, bool]] = {
        fn: ("training", True) for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d)}
    functions.update({fn: ("training", False) for fn in (F.alpha_dropout,
                                                         F.feature_alpha_dropout)})
    functions.update({fn: ("train", True) for fn in (torch.dropout, torch.alpha_dropout,
                                                     torch.feature_dropout,
                                                     torch.feature_alpha_dropout)})
    return modules, functions


def identity_input(gm: Any, node: Any) -> Any:
    """x of a node whose value is x itself: nn.Identity, or a dropout that does not drop (its
    module in eval mode, or its function called with training False: symbolic_trace and
    Dynamo write self.training in as a constant); else None. A dropout that drops is none:
    a piece around it stays unmatched."""
    import torch

    modules, functions = _dropouts()
    module = _module(gm, node)
    # exact types: a subclass may compute something in its own forward
    if type(module) is torch.nn.Identity:
        return _arg(node, 0, "input")
    if type(module) in modules:
        return None if module.training else _arg(node, 0, "input")
    if node.op == "call_function" and node.target in functions:
        name, default = functions[node.target]
        return None if _arg(node, 2, name, default) is not False else _arg(node, 0, "input")
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


def _transposed(gm: Any, node: Any) -> Any:
    """x of x.transpose(-2, -1) (its last two dimensions swapped; or of x.t()), else None."""
    if node.op == "call_method" and node.target in ("t", "mT"):
        return node.args[0]
    found = _permutation(gm, node)
    if found is None:
        return None
    x, perm = found
    rank = len(perm)
    return x if rank >= 2 and perm == (*range(rank - 2), rank - 1, rank - 2) else None


def _dims(values: Any, rank: int) -> tuple[int, ...] | None:
    """Dimensions as written (negative ones from the end), counted from 0; None where one is
    not a number in range."""
    if not all(isinstance(d, int) and not isinstance(d, bool) and -rank <= d < rank
               for d in values):
        return None
    return tuple(d % rank for d in values)


def _permutation(gm: Any, node: Any) -> tuple[Any, tuple[int, ...]] | None:
    """(x, perm) of x.transpose(i, j) or x.permute(...) (torch's or the method; dimension d of
    the result is x's perm[d]), else None."""
    if not _is_node(node) or not (_call(node, "transpose") or _call(node, "permute")):
        return None
    x = _arg(node, 0, "input")
    info = tensor_info(gm, x) if _is_node(x) else None
    if info is None:
        return None
    rank = len(info.shape)
    if _call(node, "transpose"):
        swapped = _dims([_arg(node, 1, "dim0"), _arg(node, 2, "dim1")], rank)
        if swapped is None:
            return None
        perm = list(range(rank))
        perm[swapped[0]], perm[swapped[1]] = perm[swapped[1]], perm[swapped[0]]
        return x, tuple(perm)
    rest = node.args[1:]
    written = rest[0] if len(rest) == 1 and isinstance(rest[0], tuple | list) else \
        rest or node.kwargs.get("dims", ())
    dims = _dims(written, rank)
    if dims is None or sorted(dims) != list(range(rank)):
        return None
    return x, dims


def _reshaped(gm: Any, node: Any) -> Any:
    """x of x.view(shape) / reshape / flatten / unflatten (the same elements in the same order
    under the shape the node's meta records), else None."""
    if not _is_node(node):
        return None
    if not ((node.op == "call_method" and node.target in ("view", "reshape", "flatten",
                                                          "unflatten"))
            or (node.op == "call_function" and node.target in _functions()["reshape"])):
        return None
    x = _arg(node, 0, "input")
    before = tensor_info(gm, x) if _is_node(x) else None
    after = tensor_info(gm, node)
    if before is None or after is None or before.dtype != after.dtype or \
            math.prod(before.shape) != math.prod(after.shape):
        return None  # x.view(dtype) reinterprets the bits
    return x


def _contiguous_of(node: Any) -> Any:
    """x of x.contiguous(), else None."""
    if _is_node(node) and node.op == "call_method" and node.target == "contiguous" and \
            len(node.args) == 1 and not node.kwargs:
        return node.args[0]
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def scaled_matmul(node: Any) -> tuple[Any, Any, bool] | None:
    """(the matmul node, the factor, whether it divides) of matmul * c, c * matmul or
    matmul / c, else None. The factor is as written: a number, or an fx node (a tensor)."""
    return _scaled(node, lambda x: _call(x, "matmul"))


def _scaled(node: Any, operand: Any) -> tuple[Any, Any, bool] | None:
    """(x, the factor, whether it divides) of x * c, c * x or x / c where `operand(x)`, else
    None (see scaled_matmul)."""
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
        if _is_node(x) and operand(x):
            return x, factor, divides
    return None


def _as_written(gm: Any, factor: Any) -> tuple[Any, list[Any]]:
    """(a scale as the piece takes it, the nodes computing it): a number as written, or one
    computed from shapes alone (_shape_number: GPT's 1 / math.sqrt(q.size(-1))); else the
    node itself (_softmax_scale's refusal)."""
    folded = _shape_number(gm, factor) if _is_node(factor) else None
    return folded if folded is not None else (factor, [])


def _softmax_scale(factor: Any, divides: bool) -> tuple[float | None, str | None]:
    """(graph.softmax's scale, None) for a factor it takes, else (None, why not)."""
    if not _number(factor):
        where = f" ({factor.name})" if _is_node(factor) else ""
        return None, (f"attention's scores are scaled by a tensor or a dynamic size{where}, not "
                      "a number of the traced shapes; the softmax kernel takes a python number, "
                      "a constant of the piece")
    if divides:
        scale = 1 / factor if factor != 0 else math.inf
    else:
        scale = float(factor)
    if not (math.isfinite(scale) and scale > 0):
        return None, (f"attention's scale {scale} is not positive and finite: the softmax "
                      "kernel scales the scores after subtracting their row maximum")
    return float(scale), None


def _mask_calls() -> tuple[set[Any], set[str]]:
    """The calls (functions, tensor methods) a causal mask may be made of: constructors, and
    pure comparisons, views and casts (nothing random, nothing that reads a model input)."""
    import torch

    functions = {torch.ones, torch.full, torch.arange, torch.tril, torch.triu,
                 torch.logical_not, torch.bitwise_not, torch.eq, torch.ne, torch.lt, torch.le,
                 torch.gt, torch.ge, operator.invert, operator.eq, operator.ne, operator.lt,
                 operator.le, operator.gt, operator.ge, operator.getitem}
    methods = {"tril", "triu", "bool", "to", "view", "reshape", "unsqueeze", "expand",
               "contiguous", "logical_not", "bitwise_not", "eq", "ne", "lt", "le", "gt", "ge"}
    return functions, methods


def _mask_source(gm: Any, node: Any) -> Any:
    """The tensor a get_attr node names (a buffer, or a constant symbolic_trace made), or the
    value of a module's buffer that Dynamo passes as a placeholder; None for anything else (a
    model input: it may differ from call to call)."""
    if node.op == "get_attr":
        return _attribute(gm, node.target)
    if node.op == "placeholder":
        name = _dynamo_source(node)
        if name is not None and name.rpartition(".")[2].startswith("_buffers["):
            try:
                return node.meta["grapharg"].example
            except Exception:  # the example is gone: nothing to check
                return None
    return None


def _constant_value(gm: Any, node: Any) -> tuple[Any, list[Any]]:
    """(its value, the nodes that compute it, inputs first) of a tensor computed by
    _mask_calls from constants and module buffers only; (None, []) where it reads anything
    else, so its value is the same at every call."""
    import torch

    functions, methods = _mask_calls()
    order: list[Any] = []
    seen: set[Any] = set()

    def visit(n: Any) -> bool:
        if n in seen:
            return True
        seen.add(n)
        if n.op in ("get_attr", "placeholder"):
            ok = _mask_source(gm, n) is not None
        else:
            ok = ((n.op == "call_function" and n.target in functions)
                  or (n.op == "call_method" and n.target in methods)) and \
                all(visit(i) for i in n.all_input_nodes)
        if ok:
            order.append(n)
        return ok

    if not visit(node):
        return None, []
    env: dict[Any, Any] = {}
    try:
        with torch.no_grad():
            for n in order:
                args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), env.__getitem__)
                if n.op in ("get_attr", "placeholder"):
                    env[n] = _mask_source(gm, n)
                elif n.op == "call_function":
                    env[n] = n.target(*args, **kwargs)
                else:
                    env[n] = getattr(args[0], n.target)(*args[1:], **kwargs)
    except Exception:  # torch refuses the calls: no mask to read
        return None, []
    return env[node], order


def _is_causal(mask: Any, shape: tuple[int, ...]) -> bool:
    """Whether `mask` (True: excluded), broadcast over scores of `shape` (... x T x T),
    excludes exactly key j > query i: torch's is_causal, graph.softmax's `causal`."""
    import torch

    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or len(shape) < 2:
        return False
    tokens, keys = shape[-2:]
    if tokens != keys or not 2 <= mask.dim() <= len(shape) or \
            tuple(mask.shape[-2:]) != (tokens, keys) or any(d != 1 for d in mask.shape[:-2]):
        return False
    return torch.equal(mask.reshape(tokens, keys).cpu(),
                       torch.ones(tokens, keys, dtype=torch.bool).triu(1))


NOT_CAUSAL = ("attention's mask is not provably the causal mask (key j > query i excluded, "
              "made from constants or a module's buffer): graph.softmax takes that mask only")


def _causal_mask(gm: Any, masked: Any, shape: tuple[int, ...]) -> tuple[bool, list[Any],
                                                                          str | None]:
    """(True, the mask's nodes, None) where masked = scores.masked_fill(mask, -inf) is the
    causal mask over scores of `shape`; else (False, [], why not)."""
    mask, fill = _arg(masked, 1, "mask"), _arg(masked, 2, "value")
    if not (_number(fill) and fill == -math.inf):
        written = fill if _number(fill) else "a tensor"
        return False, [], (f"attention's scores are masked with {written}, not -inf: the "
                           "softmax kernel's causal mask gives masked keys weight 0")
    value, nodes = _constant_value(gm, mask) if _is_node(mask) else (None, [])
    if not _is_causal(value, shape):
        return False, [], NOT_CAUSAL
    return True, nodes, None


# ---------------------------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------------------------

@dataclass
class _Attended:
    """softmax(q · kᵀ · scale [causal]) · v as torch wrote it: the q, k and v it reads (heads
    or not), its nodes, and what the piece's op for it takes."""

    q: Any
    k: Any
    v: Any
    nodes: list[Any]
    scale: float | None = 1.0  # None: refused
    divisor: Any = None  # S / divisor as written (torch's path divides by it)
    causal: bool = False
    refusal: str | None = None
    mask_nodes: list[Any] = field(default_factory=list)  # the piece takes those only it reads
    scale_nodes: list[Any] = field(default_factory=list)
    """Those computing the scale from shapes (_shape_number), inputs first; the same."""
    sdpa: bool = False  # one F.scaled_dot_product_attention
    written_scale: Any = None  # its `scale` argument (None: its default, 1 / sqrt(D))


def _softmax_chain(gm: Any, context: Any) -> _Attended | None:
    """softmax(S', dim=-1) @ v where S' is S = q @ kᵀ scaled (S * c, c * S, S / c) and/or
    masked (S.masked_fill(mask, -inf)), in either order; else None."""
    if not _call(context, "matmul"):
        return None
    probs, v = context.args[:2]
    if not (_is_node(probs) and _single_use(probs) and _call(probs, "softmax")):
        return None
    info = tensor_info(gm, probs)
    if info is None or not _last_dim(_arg(probs, 1, "dim"), len(info.shape)):
        return None
    found = _Attended(None, None, v, [context, probs])
    scores = _arg(probs, 0, "input")
    masked = scaled = False
    while not (_is_node(scores) and _call(scores, "matmul")):
        if not (_is_node(scores) and _single_use(scores)):
            return None
        found.nodes.append(scores)
        if not masked and _call(scores, "masked_fill"):
            masked = True
            found.causal, found.mask_nodes, why = _causal_mask(gm, scores, info.shape)
            found.refusal = found.refusal or why
            scores = _arg(scores, 0, "input")
            continue
        operands = ("matmul",) if masked else ("matmul", "masked_fill")
        factor = None if scaled else _scaled(
            scores, lambda x, kinds=operands: any(_call(x, kind) for kind in kinds))
        if factor is None:
            return None
        scaled = True
        scores, by, divides = factor
        by, found.scale_nodes = _as_written(gm, by)
        found.scale, why = _softmax_scale(by, divides)
        found.refusal = found.refusal or why
        found.divisor = by if divides else None
    if not _single_use(scores):
        return None
    q, k_t = scores.args[:2]
    k = _transposed(gm, k_t) if _is_node(k_t) and _single_use(k_t) else None
    if k is None:
        return None
    found.q, found.k = q, k
    found.nodes += [scores, k_t]
    return found


def _sdpa_call(gm: Any, node: Any) -> _Attended | None:
    """F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale), else
    None; a mask or dropout is a refusal (graph.softmax has neither)."""
    q, k, v = _arg(node, 0, "query"), _arg(node, 1, "key"), _arg(node, 2, "value")
    mask, dropout = _arg(node, 3, "attn_mask"), _arg(node, 4, "dropout_p", 0.0)
    causal, written = _arg(node, 5, "is_causal", False), node.kwargs.get("scale")
    info = tensor_info(gm, q) if _is_node(q) else None
    if info is None or not isinstance(causal, bool) or node.kwargs.get("enable_gqa", False):
        return None
    written, scale_nodes = _as_written(gm, written)
    found = _Attended(q, k, v, [node], causal=causal, sdpa=True, written_scale=written,
                      scale_nodes=scale_nodes)
    why = None
    if written is None:
        found.scale = 1 / math.sqrt(info.shape[-1])
    else:
        found.scale, why = _softmax_scale(written, False)
    if mask is not None:
        why = ("scaled_dot_product_attention's attn_mask: graph.softmax takes no mask but the "
               "causal one (is_causal=True)")
    elif not (_number(dropout) and dropout == 0):
        why = f"scaled_dot_product_attention's dropout_p {dropout}: the softmax kernel has none"
    found.refusal = why
    return found


def _heads_view(gm: Any, node: Any) -> tuple[Any, list[Any], tuple[int, ...],
                                             tuple[int, ...]] | None:
    """(x, the nodes, the viewed shape, the permutation) of x.view(shape).transpose(i, j) (or
    reshape, permute; .contiguous() after it), else None."""
    nodes = []
    inner = _contiguous_of(node)
    if inner is not None:
        if not _single_use(inner):
            return None
        nodes, node = [node], inner
    found = _permutation(gm, node)
    if found is None or not _single_use(found[0]):
        return None
    viewed, perm = found
    x, info = _reshaped(gm, viewed), tensor_info(gm, viewed)
    if x is None or info is None:
        return None
    return x, [*nodes, node, viewed], info.shape, perm


def _merged_heads(gm: Any, node: Any) -> tuple[Any, list[Any], tuple[int, ...],
                                               tuple[int, ...]] | None:
    """(o, the nodes, the permutation, the merged shape) of o.transpose(i, j) (or permute;
    .contiguous() after it) .view(shape) (or reshape), else None."""
    x, info = _reshaped(gm, node), tensor_info(gm, node)
    if x is None or info is None or not _single_use(x):
        return None
    nodes = [node]
    inner = _contiguous_of(x)
    if inner is not None:
        if not _single_use(inner):
            return None
        nodes.append(x)
        x = inner
    found = _permutation(gm, x)
    if found is None:
        return None
    return found[0], [*nodes, x], found[1], info.shape


class _Program:
    """A piece's ops, each op's values numbered as graph_function and eager_piece number them
    (one each, three for split3)."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []
        self.size = 0

    def add(self, *op: Any, results: int = 1) -> Any:
        self.ops.append(op)
        first, self.size = self.size, self.size + results
        return ("op", first) if results == 1 else [("op", first + i) for i in range(results)]


def _after_cache(gm: Any, node: Any) -> tuple[Any, Any] | None:
    """(the cache, the new keys or values) of torch.cat([cache, new], dim=-2), decoding with
    a KV cache (the cached tokens first), else None."""
    if not (_is_node(node) and _single_use(node) and _call(node, "cat")):
        return None
    tensors, dim, info = _arg(node, 0, "tensors"), _arg(node, 1, "dim", 0), tensor_info(gm, node)
    if info is None or not isinstance(tensors, list | tuple) or len(tensors) != 2 or \
            dim not in (-2, len(info.shape) - 2) or not all(_is_node(t) for t in tensors):
        return None
    return tensors[0], tensors[1]


def _match_attention_at(gm: Any, last: Any, out: LinearForm) -> Piece | None:
    """The attention piece whose output linear is `out` (ending at `last`), or None."""
    attended = out.x
    if not (_is_node(attended) and out.only_reads(attended)):
        return None
    merge = _merged_heads(gm, attended)
    context = merge[0] if merge is not None else attended
    if not (_is_node(context) and _single_use(context)):
        return None
    core = _sdpa_call(gm, context) if _call(context, "sdpa") else _softmax_chain(gm, context)
    if core is None:
        return None
    # decoding: k and v each after a KV cache (both or neither), the caches inputs
    caches = [_after_cache(gm, n) for n in (core.k, core.v)]
    if (caches[0] is None) != (caches[1] is None):
        return None
    k_new, v_new = (core.k, core.v) if caches[0] is None else (caches[0][1], caches[1][1])
    views = [_heads_view(gm, n) if _is_node(n) else None for n in (core.q, k_new, v_new)]
    heads = views[0] is not None
    if any((view is not None) != heads for view in views) or (merge is not None) != heads:
        return None
    items = [view[0] for view in views] if heads else [core.q, core.k, core.v]  # type: ignore
    sizes = set(core.scale_nodes)  # q.size(-1) is no second use: it goes with the piece
    if not all(_is_node(n) and len(set(n.users) - sizes) == 1 and n.op == "call_function"
               and n.target is operator.getitem for n in items):
        return None
    split = items[0].args[0]
    if any(n.args[0] is not split for n in items) or [n.args[1] for n in items] != [0, 1, 2]:
        return None
    if not (_call(split, "split") and len(split.users) == 3):
        return None
    qkv = _arg(split, 0, "tensor") if split.op == "call_function" else split.args[0]
    projection = linear_form(gm, qkv) if _is_node(qkv) and _single_use(qkv) else None
    if projection is None:
        return None
    info = tensor_info(gm, qkv)
    # one sequence or a batch, split in three equal widths (the results' shapes: under
    # symbolic_trace a width read from x.shape is an fx node)
    if info is None or len(info.shape) not in (2, 3) or info.shape[-1] % 3 or \
            not _last_dim(_arg(split, 2, "dim", 0), len(info.shape)):
        return None
    part = (*info.shape[:-1], info.shape[-1] // 3)
    if any(getattr(tensor_info(gm, n), "shape", None) != part for n in items):
        return None
    nodes = [*projection.nodes, split, *items, *core.nodes, *out.nodes]
    if caches[0] is not None:
        nodes += [core.k, core.v]
    if heads:
        shape = views[0][2]  # type: ignore[index]
        perm = HEADS_PERM.get(len(shape))
        assert merge is not None
        if any(view[2] != shape or view[3] != perm for view in views) or \
                shape[:-2] != part[:-1] or shape[-2] * shape[-1] != part[-1] or \
                merge[2] != perm or merge[3] != part:
            return None
        nodes += [n for view in views for n in view[1]] + merge[1]  # type: ignore[index]
    inside = set(nodes)
    for node in reversed(core.mask_nodes + core.scale_nodes):  # those only the piece reads
        if node.op != "placeholder" and node not in inside and \
                all(user in inside for user in node.users):
            inside.add(node)
            nodes.append(node)
    if any(user not in inside for node in nodes if node is not last for user in node.users):
        return None
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    piece = Piece("Attention", last, sorted(nodes, key=order.__getitem__),
                  refusal=core.refusal, shape_constants=bool(core.scale_nodes))
    refs = [projection.x, projection.weight] + \
        ([projection.bias] if projection.bias is not None else []) + [out.weight] + \
        ([out.bias] if out.bias is not None else []) + \
        ([caches[0][0], caches[1][0]] if caches[0] is not None else [])
    piece.inputs = refs
    program = _Program()
    qkv_value = _linear(program, projection, refs)
    q, k, v = program.add("split3", qkv_value, results=3)
    if heads:  # [B x] T x C -> [B x] T x H x D -> [B x] H x T x D
        q, k, v = (program.add("transpose", program.add("reshape", r, shape), perm)
                   for r in (q, k, v))
    if caches[0] is not None:  # the cached tokens' keys and values first
        k, v = (program.add("cat", [("in", len(refs) - 2 + i), new], -2)
                for i, new in enumerate((k, v)))
    if core.sdpa:
        o = program.add("sdpa", q, k, v, core.scale, core.causal, core.written_scale)
    else:  # scale: None where refused; torch's path divides by the divisor as written
        probs = program.add("softmax", program.add("linear", q, k, None), core.scale,
                            core.divisor, core.causal)
        o = program.add("matmul", probs, v)
    if heads:  # the heads side by side again: [B x] T x C
        o = program.add("reshape", program.add("transpose", o, perm), part)
    _linear(program, out, refs, o)
    piece.ops = program.ops
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
    second = linear_form(gm, last)
    if second is None:
        return None
    hidden = second.x
    if not _is_node(hidden) or not second.only_reads(hidden):
        return None
    if _attended(gm, hidden):
        return _match_attention_at(gm, last, second)
    if is_mul(hidden) and not second.transposed:  # LLaMA's SwiGLU: nn.Linear projections
        return _match_swiglu_at(gm, last, second)
    return _match_mlp_at(gm, last, second)


def _attended(gm: Any, node: Any) -> bool:
    """Whether `node` may be attention's output, softmax(S) · v or its heads merged by a view
    (not a Conv1D's output, which ends in a view too): the output projection's input."""
    if _call(node, "matmul") or _call(node, "sdpa"):
        return True
    return _reshaped(gm, node) is not None and conv1d_form(gm, node) is None


def _match_swiglu_at(gm: Any, last: Any, down: LinearForm) -> Piece | None:
    """linear(silu(linear(x, wg)) * linear(x, wu), wd) whose down projection is `down`."""
    hidden, w2 = down.x, down.weight
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
    # the down projection's bias, where it has one, is the second GEMM's epilogue
    piece.inputs = [x, wg, wu, w2] + ([down.bias] if down.bias is not None else [])
    piece.ops = [("linear", ("in", 0), ("in", 1), None), ("linear", ("in", 0), ("in", 2), None),
                 ("silu", ("op", 0)), ("mul", ("op", 2), ("op", 1)),
                 ("linear", ("op", 3), ("in", 3), ("in", 4) if down.bias is not None else None)]
    return piece


_MLP_NAMES = {None: "Linear→Linear", "gelu_tanh": "Linear→GeLU→Linear",
              "gelu": "Linear→GeLU→Linear", "silu": "Linear→SiLU→Linear",
              "relu": "Linear→ReLU→Linear"}


def _match_mlp_at(gm: Any, last: Any, second: LinearForm) -> Piece | None:
    """linear(act(linear(x, w1[, b1])), w2[, b2]) whose second linear is `second` (ending at
    `last`), or None; each linear nn.Linear's, F.linear's or Conv1D's."""
    hidden = second.x
    act = activation(gm, hidden)
    output = hidden  # the first linear's
    kind = None
    if act is not None:
        kind, output = act
        if not _is_node(output) or not _single_use(output):
            return None
    first = linear_form(gm, output)
    if first is None:
        return None
    nodes = {*first.nodes, *second.nodes, *([hidden] if kind else [])}
    piece = Piece(_MLP_NAMES[kind], last, [n for n in gm.graph.nodes if n in nodes])
    refs = [first.x, first.weight] + ([first.bias] if first.bias is not None else []) + \
        [second.weight] + ([second.bias] if second.bias is not None else [])
    program = _Program()
    value = _linear(program, first, refs)
    if kind:
        value = program.add(kind, value)
    _linear(program, second, refs, value)
    piece.ops, piece.inputs = program.ops, refs
    return piece


def _linear(program: _Program, form: LinearForm, refs: list[Any], x: Any = None) -> Any:
    """The piece's op of the linear `form`, its weight and bias among the piece's inputs
    `refs`, its input `x` (a value of the program; None: its own x among `refs`): x · wᵀ + b,
    a K x N weight (Conv1D's) through a transpose first, as torch's addmm reads it."""
    def ref(value: Any) -> tuple | None:
        return None if value is None else ("in", next(i for i, r in enumerate(refs)
                                                      if r is value))

    weight = ref(form.weight)
    if form.transposed:
        weight = program.add("transpose", weight, (1, 0))
    return program.add("linear", ref(form.x) if x is None else x, weight, ref(form.bias))


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
            n = w.type.get_shape()[-2]  # type: ignore[attr-defined]  # (k of q · kᵀ: batched)
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
            new = graph.SoftmaxOp(get(op[1]), -1, op[2], causal=op[4])
        elif kind == "sdpa":  # softmax(q · kᵀ · scale [causal]) · v: three graph ops
            q, k, v = get(op[1]), get(op[2]), get(op[3])
            assert q is not None and k is not None and v is not None
            rows = q.type.get_shape()[:-1]  # type: ignore[attr-defined]
            scores = graph.LinearOp(q, k, None, TensorType(
                element, [*rows, k.type.get_shape()[-2]]))  # type: ignore[attr-defined]
            probs = graph.SoftmaxOp(scores.result, -1, op[4], causal=op[5])
            block.add_ops([scores, probs])
            new = graph.MatmulOp(probs.result, v, TensorType(
                element, [*rows, v.type.get_shape()[-1]]))  # type: ignore[attr-defined]
        elif kind == "reshape":
            new = graph.ReshapeOp(get(op[1]), TensorType(element, list(op[2])))
        elif kind == "transpose":
            x = get(op[1])
            assert x is not None
            shape = x.type.get_shape()  # type: ignore[attr-defined]
            new = graph.TransposeOp(x, op[2], TensorType(element, [shape[d] for d in op[2]]))
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
        elif kind == "cat":  # a KV cache's tokens, then the new ones
            parts = [get(ref) for ref in op[1]]
            shape = list(parts[0].type.get_shape())  # type: ignore[union-attr]
            dim = op[2] % len(shape)
            shape[dim] = sum(p.type.get_shape()[dim] for p in parts)  # type: ignore[union-attr]
            new = graph.ConcatOp(parts, op[2], TensorType(element, shape))  # type: ignore
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


__all__ = ["ACTIVATIONS", "HEADS_PERM", "NOT_CAUSAL", "TO_NCHW", "TO_NHWC", "Piece", "TensorInfo",
           "UnsupportedPiece", "UnsupportedTensor", "conv_parts", "element_type", "find_pieces",
           "graph_function", "insertion_point", "scaled_matmul", "tensor_info"]
