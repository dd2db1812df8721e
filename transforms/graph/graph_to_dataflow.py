"""`graph-to-dataflow`: a graph function that is a stack of Linear layers, as a Kitsune pipeline.

    func.func @f(%x: tensor<M x K0 x f16>, %w0, %b0, ...) -> (Y[, S])
        h_0 = %x
        h_{l+1} = relu?(graph.linear(h_l | graph.concat(%a, h_l dim -1), %w_l, %b_l))
        S = graph.linear(h_l, %w_s, %b_s)   (1 output: a dot head on a layer's input)
        return h_L[, S]    (or graph.layer_norm(h_L, %gamma, %beta))

becomes the stage kernels and the `dataflow.pipeline` of kernels/mlp_pipeline.py's MlpStack
(one stage a layer, or several where `fused`; activations between them in queues), the
function's type kept on the module (`graph.signature`) and what each stage kernel's argument is
on its stage (`graph.bind`: input i, result i), as graph-to-stages does for a stage program.

The walk starts at the first argument and follows, layer by layer, the one op that reads h: a
linear, or a concat of a function argument before h (the first argument: a skip, NeRF's
cat([x, h]); another: a side input, NeRF's directions; the kernel reads the concatenated
columns first, so cat([h, a]) is refused, its weights' columns being in the other order). A
linear with one output that reads h beside the next layer is the dot head (its result a
function result). A layer's ReLU is the linear's one user; without it the layer is plain. A
layer norm of the last layer's output, its weight and bias function arguments, is the stack's
result (MeshGraphNets' MLPs): MlpStack's layer norm stage. Each
layer needs its bias, weights and biases are function arguments, everything is f16, and what
the stack refuses (MlpStack's checks: widths, shared memory, ...) is refused at the function,
in MlpStack's words.

Options: `fused` (layers computed in the stage of the layer before them, MlpStack's),
`fuse_light` (instead, the light first and last layers fused into their neighbours' stages:
kernels/mlp_pipeline.py's light_fusion), `sms` (CTAs resident at once, shared among the
stages), `allot` (how: "even", default_ctas; "model", dataflow-allot-ctas's ILP on each
layer's modelled bulk-synchronous time, modelled_layer_ms).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    Float16Type,
    ModuleOp,
    TensorType,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from tilesync.dialects import dataflow, graph
from tilesync.dialects.locations import diagnostic
from tilesync.kernels.mlp_pipeline import (
    MlpStack,
    fitting_stack,
    light_fusion,
    mlp_pipeline_module,
    most_queue_groups,
    pipeline_op,
    stage_arguments,
)
from tilesync.transforms.graph.function import replace_function, single_function

PASS = "graph-to-dataflow"


@dataclass
class StackMatch:
    """The stack read off a function: MlpStack's arguments, and the function argument (or
    result) index of every tensor its kernels take."""

    rows: int
    widths: list[int]
    weights: list[int] = field(default_factory=list)
    biases: list[int] = field(default_factory=list)
    skips: list[int] = field(default_factory=list)
    sides: list[tuple[int, int, int]] = field(default_factory=list)  # (layer, width, arg)
    plain: list[int] = field(default_factory=list)
    dot: tuple[int, int, int, int] | None = None  # (layer, w arg, b arg, result)
    norm: tuple[int, int, float] | None = None  # the layer norm's (gamma arg, beta arg, eps)
    y: int = 0  # the result index of the last layer's output


def _arg(value: SSAValue, fn: func.FuncOp, op: Operation, what: str) -> int:
    if not isinstance(value, BlockArgument) or value.block is not fn.body.block:
        raise diagnostic(PASS, op, f"{what} must be an argument of @{fn.sym_name.data}")
    return value.index


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _linear_parts(fn: func.FuncOp, op: graph.LinearOp, layer: int) -> tuple[int, int]:
    if op.bias is None:
        raise diagnostic(PASS, op, f"layer {layer}'s linear has no bias: the stage kernels "
                                   "add one")
    return _arg(op.weight, fn, op, f"layer {layer}'s weight"), \
        _arg(op.bias, fn, op, f"layer {layer}'s bias")


def match_stack(fn: func.FuncOp) -> StackMatch:
    """The stack of `fn`, or a diagnostic at the op where it stops being one."""
    body = fn.body.block
    ret = body.last_op
    if not isinstance(ret, func.ReturnOp) or not 1 <= len(ret.arguments) <= 2:
        raise diagnostic(PASS, ret or fn, "a stack returns its output, and its dot head's")
    if not body.args:
        raise diagnostic(PASS, fn, "a stack takes its input as the first argument")
    for value in [*body.args, *ret.arguments]:
        kind = value.type
        if not isinstance(kind, TensorType) or not isinstance(kind.element_type, Float16Type):
            raise diagnostic(PASS, fn, f"the stack's kernels take f16 tensors, got {kind}")
    x = body.args[0]
    if len(_shape(x)) != 2:
        raise diagnostic(PASS, fn, f"the input is rows x columns, got {x.type}")
    match = StackMatch(rows=_shape(x)[0], widths=[_shape(x)[1]])
    results = list(ret.arguments)
    matched: set[Operation] = {ret}
    h: SSAValue = x
    layer = 0
    while h not in results:
        # the input is also the skips' concatenated columns: those concats read it first
        users = [use.operation for use in h.uses
                 if not (h is x and isinstance(use.operation, graph.ConcatOp)
                         and use.index == 0)]
        heads = [op for op in users if isinstance(op, graph.LinearOp) and op.input is h
                 and _shape(op.result)[-1] == 1 and op.result in results]
        nexts = [op for op in users if op not in heads]
        if not nexts and len(heads) == 1:  # not beside a layer: the stack's last, 1 wide
            nexts, heads = heads, []
        if len(heads) > 1 or (heads and match.dot is not None):
            raise diagnostic(PASS, heads[-1], "a stack has one dot head")
        if heads:
            head = heads[0]
            w, b = _linear_parts(fn, head, layer)
            match.dot = (layer, w, b, results.index(head.result))
            matched.add(head)
        if len(nexts) != 1:
            raise diagnostic(PASS, users[0] if users else fn,
                             f"layer {layer}'s input is read by {len(nexts)} ops: a stack's "
                             "layer reads only the one before it")
        op = nexts[0]
        if isinstance(op, graph.ConcatOp):
            if len(op.inputs) != 2 or op.inputs[1] is not h or \
                    op.dim.value.data not in (-1, len(_shape(h)) - 1):
                raise diagnostic(PASS, op, "a stack concatenates one function argument before "
                                           "h, along the columns: concat(%a, h dim -1)")
            arg = _arg(op.inputs[0], fn, op, "the concatenated input")
            if arg == 0:
                match.skips.append(layer)
            else:
                match.sides.append((layer, _shape(op.inputs[0])[-1], arg))
            if op.result.uses.get_length() != 1:
                raise diagnostic(PASS, op, "the concatenation is read by one linear")
            matched.add(op)
            op = next(iter(op.result.uses)).operation
        if not isinstance(op, graph.LinearOp):
            raise diagnostic(PASS, op, f"layer {layer} must be a graph.linear, found {op.name}")
        w, b = _linear_parts(fn, op, layer)
        match.weights.append(w)
        match.biases.append(b)
        matched.add(op)
        out: SSAValue = op.result
        relu = [use.operation for use in out.uses]
        if len(relu) == 1 and isinstance(relu[0], graph.ReluOp):
            out = relu[0].result
            matched.add(relu[0])
        else:
            match.plain.append(layer)
        match.widths.append(_shape(out)[-1])
        h = out
        layer += 1
        norms = [use.operation for use in h.uses if isinstance(use.operation, graph.LayerNormOp)]
        if norms:
            norm = norms[0]
            assert isinstance(norm, graph.LayerNormOp)
            if h.uses.get_length() != 1 or norm.result not in results:
                raise diagnostic(PASS, norm, "a stack's layer norm normalizes the last layer's "
                                             "output, read by nothing else, into its result")
            match.norm = (_arg(norm.weight, fn, norm, "the layer norm's weight"),
                          _arg(norm.bias, fn, norm, "the layer norm's bias"),
                          norm.eps.value.data)
            matched.add(norm)
            h = norm.result
    match.y = results.index(h)
    for other in body.ops:
        if other not in matched:
            raise diagnostic(PASS, other, f"{other.name} is not part of the stack (its layers, "
                                          "concatenations, ReLUs, dot head and layer norm)")
    if (match.dot is not None and len(results) != 2) or (match.dot is None and len(results) != 1):
        raise diagnostic(PASS, ret, "a stack returns its output, and its dot head's")
    if not match.weights:
        raise diagnostic(PASS, ret or fn, "a stack has at least one graph.linear layer; this "
                                          "function returns its input")
    return match


def _binds(match: StackMatch, stack) -> dict[str, list[graph.BindAttr]]:
    """Each stage kernel's arguments (queues aside), in its parameters' order."""
    def inp(i: int) -> graph.BindAttr:
        return graph.BindAttr("input", i)

    dot = None
    if match.dot is not None:
        _, w, b, result = match.dot
        dot = (inp(w), inp(b), graph.BindAttr("result", result))
    norm = None if match.norm is None else (inp(match.norm[0]), inp(match.norm[1]))
    return stage_arguments(stack, inp(0), [inp(i) for i in match.weights],
                           [inp(i) for i in match.biases], graph.BindAttr("result", match.y),
                           norm=norm, sides=[inp(arg) for _, _, arg in match.sides], dot=dot)


def stage_ms(stack: MlpStack, layer_ms: list[float]) -> list[float]:
    """Each stage's bulk-synchronous time: its layers', then the layer norm's (`layer_ms`: one
    per layer, then the layer norm's)."""
    times = [sum(layer_ms[layer] for layer in layers) for layers in stack.stage_layers]
    return times + list(layer_ms[stack.layers:])


def allotted_ctas(stack: MlpStack, layer_ms: list[float]) -> tuple[int, ...]:
    """dataflow-allot-ctas on the stack's pipeline, each stage's rate its layers'
    bulk-synchronous tiles per second (measured, or modelled_layer_ms): the CTA counts that
    balance the stages."""
    from xdsl.dialects.builtin import FloatAttr, f64

    from tilesync.contract import BSP_RATE_ATTR
    from tilesync.transforms.dataflow.allot_ctas import AllotCTAsPass

    pipeline = pipeline_op(stack)  # the stages alone: the kernels are not needed to size them
    module = ModuleOp([pipeline])
    for stage, ms in zip(pipeline.stages, stage_ms(stack, layer_ms), strict=True):
        stage.attributes[BSP_RATE_ATTR] = FloatAttr(stack.tiles / (ms * 1e-3), f64)
    # the stages are one persistent kernel's blocks: SIMT and tensor CTAs share the slots
    AllotCTAsPass(sms=stack.sms, shared_slots=True).apply(Context(), module)
    return tuple(stage.num_ctas for stage in pipeline.stages)


MODEL_BANDWIDTH = 2.0e12
"""Bytes per second a bulk-synchronous layer moves (H100: 1.8-2.0 TB/s measured); only the
ratios between layers matter to the allotment."""


def modelled_layer_ms(stack: MlpStack) -> list[float]:
    """Each layer's bulk-synchronous time as its rows' bytes in and out at MODEL_BANDWIDTH (the
    dot head's input read again, by its own kernel), then the layer norm's: the layers are
    memory-bound, and on an H100 (bench/results/dataflow-mlp) the ILP's CTA counts from these
    came within 2 CTAs a stage of those from the measured times."""
    def ms(columns: int) -> float:
        return stack.rows * columns * 2 / MODEL_BANDWIDTH * 1e3

    times = [ms(stack.in_width(layer) + stack.widths[layer + 1]
                + (stack.in_width(layer) if layer == stack.dot_head else 0))
             for layer in range(stack.layers)]
    return times + ([ms(2 * stack.width)] if stack.layer_norm else [])


ALLOTMENTS = ("even", "model")


def stack_of(fn: func.FuncOp, fused: tuple[int, ...] = (), fuse_light: bool = False,
             sms: int = 132, allot: str = "even") -> tuple[StackMatch, MlpStack]:
    """The function's stack as MlpStack takes it (the pass's options), or a diagnostic."""
    match = match_stack(fn)
    shape = {"skips": tuple(match.skips),
             "side_inputs": tuple((layer, width) for layer, width, _ in match.sides),
             "plain_layers": tuple(match.plain),
             "dot_head": None if match.dot is None else match.dot[0], "sms": sms,
             "groups": most_queue_groups(tuple(match.widths))}
    if match.norm is not None:
        shape.update(layer_norm=True, layer_norm_eps=match.norm[2])
    try:
        if fuse_light:
            fused = light_fusion(match.rows, tuple(match.widths), **shape)
        stack = fitting_stack(match.rows, tuple(match.widths), fused=tuple(fused), **shape)
        if allot == "model":
            stack = dataclasses.replace(stack, ctas=allotted_ctas(stack,
                                                                  modelled_layer_ms(stack)))
        return match, stack
    except ValueError as err:
        raise diagnostic(PASS, fn, str(err)) from err


@dataclass(frozen=True)
class GraphToDataflowPass(ModulePass):
    """Replace the module's graph function by the Kitsune pipeline of the stack it is."""

    name = PASS

    fused: tuple[int, ...] = ()
    fuse_light: bool = False
    sms: int = 132
    allot: str = "even"

    def __post_init__(self) -> None:
        if self.sms < 1:
            raise ValueError(f"option 'sms' must be positive, got {self.sms}")
        if self.allot not in ALLOTMENTS:
            raise ValueError(f"option 'allot' is one of {', '.join(ALLOTMENTS)}, got "
                             f"{self.allot!r}")
        if self.fused and self.fuse_light:
            raise ValueError("options 'fused' and 'fuse_light' each choose the fused layers: "
                             "give one")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = single_function(op, PASS)
        match, stack = stack_of(fn, tuple(self.fused), self.fuse_light, self.sms, self.allot)
        pipeline_module = mlp_pipeline_module(stack)
        binds = _binds(match, stack)
        for stage in next(o for o in pipeline_module.ops
                          if isinstance(o, dataflow.PipelineOp)).stages:
            stage.attributes[graph.BIND_ATTR] = ArrayAttr(binds[stage.sym_name.data])
        replace_function(op, fn, pipeline_module)


__all__ = ["ALLOTMENTS", "GraphToDataflowPass", "StackMatch", "allotted_ctas", "match_stack",
           "modelled_layer_ms", "stack_of", "stage_ms"]
