"""`graph-to-stages`: a graph-level piece (one `func.func` of `graph` ops) to a stage program.

The pass matches the function against the patterns it knows, picks tile shapes and grids for
the matched GEMMs, and replaces the function by the stage program the cuSync passes take:
generated kernels with sync hooks (kernels/gemm.py), one `sync.stage` per kernel, the
`sync.dependency` between them and the launches (kernels/mlp.py builds that program).

Patterns (x, weights and biases are function arguments; every intermediate has one use):

    MLP     y = linear(act(linear(x, w1[, b1])), w2[, b2])   act: gelu "tanh" or none
    SwiGLU  y = linear(mul(silu(linear(x, wg)), linear(x, wu)), wd)   (LLaMA's MLP)

What each kernel argument is, in terms of the function, is a `#graph.bind` on its stage
(`graph.bind`: input i, temp i, result i, or gate_up i, j for the SwiGLU weight: the rows of
wg and wu interleaved in blocks of 8, the layout the GEMM's SwiGLU epilogue reads); the module
keeps the function's type (`graph.signature`) and the temporaries' types (`graph.temps`).

Tiles are the wgmma configs of the MLP bench (kernels/mlp.py default_configs; sm_90a): BM 64
for up to 64 rows, else 128; BK 64; GEMM1's BN keeps the H columns of one tile a multiple of
GEMM2's BK, so the dependency `(d0, d1)[s0] -> (d0, s0 floordiv R)` is exact. A piece no pattern
covers, an epilogue the GEMM does not compute, or a shape the kernels refuse is a diagnostic at
the op concerned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    FunctionType,
    ModuleOp,
    TensorType,
    UnitAttr,
)
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from tilesync.dialects import graph, sync
from tilesync.dialects.locations import diagnostic
from tilesync.kernels.config import gemm_config
from tilesync.kernels.mlp import CONSUMER, PRODUCER, MlpSpec, default_configs, mlp_stage_module

PASS = "graph-to-stages"
DTYPES = {Float16Type: "f16", BFloat16Type: "bf16"}


@dataclass(frozen=True)
class MlpMatch:
    """A matched MLP: the function argument index of each operand (None: absent)."""

    x: int
    w1: int
    w2: int
    b1: int | None
    b2: int | None
    gate_up: tuple[int, int] | None  # (wg, wu) for SwiGLU, then w1 is wg
    activation: str | None  # "gelu" or "swiglu" or None
    rows: int  # M: the rows of x (its leading dimensions flattened)
    k1: int
    hidden: int
    n2: int
    dtype: str
    anchor: Operation  # the second linear: where diagnostics point

    @property
    def epilogue1(self) -> str | None:
        if self.activation == "swiglu":
            return "swiglu"
        if self.b1 is not None:
            return "bias_gelu" if self.activation == "gelu" else "bias"
        return self.activation

    @property
    def epilogue2(self) -> str | None:
        return "bias" if self.b2 is not None else None


def _arg(value: SSAValue, fn: func.FuncOp, op: Operation, what: str) -> int:
    if not isinstance(value, BlockArgument) or value.block is not fn.body.block:
        raise diagnostic(PASS, op, f"{what} must be an argument of @{fn.sym_name.data} "
                                   "(weights are the piece's inputs)")
    return value.index


def _producer(value: SSAValue, kind: type[Operation], op: Operation, what: str) -> Operation:
    owner = value.owner if isinstance(value, OpResult) else None
    if not isinstance(owner, kind):
        found = owner.name if isinstance(owner, Operation) else "a function argument"
        raise diagnostic(PASS, op, f"{what} must come from {kind.name}, found {found}")
    if not value.has_one_use():
        raise diagnostic(PASS, owner, f"{kind.name}'s result is used {value.uses.get_length()} "
                                      "times; the pattern keeps it inside the piece")
    return owner


def _dtype(kind: TensorType, op: Operation) -> str:
    element = type(kind.element_type)
    if element not in DTYPES:
        raise diagnostic(PASS, op, f"the generated GEMMs take f16 or bf16, not "
                                   f"{kind.element_type}")
    return DTYPES[element]


def match_mlp(fn: func.FuncOp) -> MlpMatch:
    """The MLP or SwiGLU pattern of `fn`, or a diagnostic saying where it does not fit."""
    body = fn.body.block
    ret = body.last_op
    if not isinstance(ret, func.ReturnOp) or len(ret.arguments) != 1:
        raise diagnostic(PASS, ret or fn, "a piece returns exactly one tensor")
    second = _producer(ret.arguments[0], graph.LinearOp, ret, "the result")
    assert isinstance(second, graph.LinearOp)
    hidden_value = second.input
    covered: list[Operation] = [second, ret]
    gate_up = None
    activation = None
    owner = hidden_value.owner if isinstance(hidden_value, OpResult) else None
    if isinstance(owner, graph.MulOp):
        covered.append(_producer(hidden_value, graph.MulOp, second, "the hidden layer"))
        silu_side = [v for v in (owner.lhs, owner.rhs)
                     if isinstance(v, OpResult) and isinstance(v.owner, graph.SiluOp)]
        if len(silu_side) != 1:
            raise diagnostic(PASS, owner, "SwiGLU multiplies silu(x · gateᵀ) by x · upᵀ: one "
                                          "operand must be a graph.silu")
        up_value = owner.rhs if silu_side[0] is owner.lhs else owner.lhs
        silu = _producer(silu_side[0], graph.SiluOp, owner, "the gate")
        assert isinstance(silu, graph.SiluOp)
        gate = _producer(silu.input, graph.LinearOp, silu, "silu's input")
        up = _producer(up_value, graph.LinearOp, owner, "the up projection")
        assert isinstance(gate, graph.LinearOp) and isinstance(up, graph.LinearOp)
        covered += [silu, gate, up]
        if gate.input != up.input:
            raise diagnostic(PASS, up, "gate and up projections must read the same input")
        if gate.bias is not None or up.bias is not None:
            raise diagnostic(PASS, gate, "the SwiGLU epilogue takes no bias")
        first = gate
        gate_up = (_arg(gate.weight, fn, gate, "the gate weight"),
                   _arg(up.weight, fn, up, "the up weight"))
        activation = "swiglu"
    else:
        if isinstance(owner, graph.GeluOp):
            gelu = _producer(hidden_value, graph.GeluOp, second, "the hidden layer")
            assert isinstance(gelu, graph.GeluOp)
            if gelu.approximate.data != "tanh":
                raise diagnostic(PASS, gelu, "the GEMM epilogue computes GeLU's tanh "
                                             "approximation; an exact (erf) GeLU stays in torch")
            covered.append(gelu)
            activation = "gelu"
            hidden_value = gelu.input
        elif isinstance(owner, graph.SiluOp | graph.ReluOp | graph.SoftmaxOp):
            raise diagnostic(PASS, owner, f"no GEMM epilogue computes {owner.name}")
        first = _producer(hidden_value, graph.LinearOp, second, "the hidden layer")
        assert isinstance(first, graph.LinearOp)
        covered.append(first)
    x_type = first.input.type
    assert isinstance(x_type, TensorType)
    shape = tuple(x_type.get_shape())
    hidden_type = second.input.type
    out_type = second.result.type
    assert isinstance(hidden_type, TensorType) and isinstance(out_type, TensorType)
    match = MlpMatch(
        x=_arg(first.input, fn, first, "the input"),
        w1=_arg(first.weight, fn, first, "the first weight"),
        w2=_arg(second.weight, fn, second, "the second weight"),
        b1=None if first.bias is None else _arg(first.bias, fn, first, "the first bias"),
        b2=None if second.bias is None else _arg(second.bias, fn, second, "the second bias"),
        gate_up=gate_up, activation=activation, rows=math.prod(shape[:-1]), k1=shape[-1],
        hidden=hidden_type.get_shape()[-1], n2=out_type.get_shape()[-1],
        dtype=_dtype(x_type, first), anchor=second)
    extra = [op for op in body.ops if op not in covered]
    if extra:
        raise diagnostic(PASS, extra[0], f"{extra[0].name} is not part of the MLP pattern; "
                                         "a piece holds one pattern and nothing else")
    return match


def mlp_configs(match: MlpMatch) -> MlpSpec:
    """The two GEMMs' configs (wgmma) for the matched shapes; a diagnostic where the kernels
    cannot take them."""
    n1 = 2 * match.hidden if match.activation == "swiglu" else match.hidden
    for what, size in (("the input width", match.k1), ("the hidden width", match.hidden),
                       ("the output width", match.n2)):
        if size % 64:
            raise diagnostic(PASS, match.anchor, f"{what} {size} is not a multiple of 64 (the "
                                                 "GEMMs' k-tile and the dependency's step)")
    (t1, w1, s1), (t2, w2, s2) = default_configs("custom", match.rows, "wgmma")
    per_tile = t1[1] // (2 if match.activation == "swiglu" else 1)
    if per_tile % t2[2]:
        raise diagnostic(PASS, match.anchor, f"GEMM1's tile writes {per_tile} columns of the "
                                             f"hidden layer, not a multiple of BK {t2[2]}")
    try:
        c1 = gemm_config(match.rows, n1, match.k1, t1, w1, s1, dtype=match.dtype,
                         epilogue=match.epilogue1, name=PRODUCER, sync_hooks=True,
                         mma="wgmma", b_layout="col")
        c2 = gemm_config(match.rows, match.n2, match.hidden, t2, w2, s2, dtype=match.dtype,
                         epilogue=match.epilogue2, name=CONSUMER, sync_hooks=True,
                         mma="wgmma", b_layout="col")
    except ValueError as err:
        raise diagnostic(PASS, match.anchor, f"the generated GEMMs refuse this shape: {err}") \
            from err
    return MlpSpec("graph", match.rows, c1, c2)


def bindings(match: MlpMatch) -> dict[str, list[graph.BindAttr]]:
    """Each stage's kernel arguments (A, B, C[, bias]) as #graph.bind."""
    weight1 = graph.BindAttr("gate_up", *match.gate_up) if match.gate_up \
        else graph.BindAttr("input", match.w1)
    first = [graph.BindAttr("input", match.x), weight1, graph.BindAttr("temp", 0)]
    if match.b1 is not None:
        first.append(graph.BindAttr("input", match.b1))
    second = [graph.BindAttr("temp", 0), graph.BindAttr("input", match.w2),
              graph.BindAttr("result", 0)]
    if match.b2 is not None:
        second.append(graph.BindAttr("input", match.b2))
    return {PRODUCER: first, CONSUMER: second}


def _stage_program(fn: func.FuncOp) -> tuple[ModuleOp, MlpMatch]:
    match = match_mlp(fn)
    spec = mlp_configs(match)
    module = mlp_stage_module(spec=spec)
    binds = bindings(match)
    for op in module.ops:
        if isinstance(op, sync.StageOp):
            op.attributes[graph.BIND_ATTR] = ArrayAttr(binds[op.sym_name.data])
    return module, match


@dataclass(frozen=True)
class GraphToStagesPass(ModulePass):
    """Replace the module's graph function by the stage program of the pattern it matches."""

    name = PASS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fns = [f for f in op.ops if isinstance(f, func.FuncOp) and not f.is_declaration]
        if len(fns) != 1:
            raise diagnostic(PASS, op, f"lowers one graph function per module, found "
                                       f"{len(fns)}")
        fn = fns[0]
        program, match = _stage_program(fn)
        temp = TensorType(fn.function_type.inputs.data[match.x].element_type,
                          [match.rows, match.hidden])
        signature = FunctionType.from_lists(fn.function_type.inputs.data,
                                            fn.function_type.outputs.data)
        Rewriter.erase_op(fn)
        for stage_op in list(program.ops):
            stage_op.detach()
            op.body.block.add_op(stage_op)
        op.attributes["gpu.container_module"] = UnitAttr()
        op.attributes[graph.SIGNATURE_ATTR] = signature
        op.attributes[graph.TEMPS_ATTR] = ArrayAttr([temp])


__all__ = ["GraphToStagesPass", "MlpMatch", "bindings", "match_mlp", "mlp_configs"]
