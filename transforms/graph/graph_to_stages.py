"""`graph-to-stages`: a graph-level piece (one `func.func` of `graph` ops) to a stage program.

The pass matches the function against the patterns it knows, picks tile shapes and grids for
the matched GEMMs, and replaces the function by the stage program the cuSync passes take:
generated kernels with sync hooks (kernels/gemm.py), one `sync.stage` per kernel, the
`sync.dependency` between them and the launches (kernels/mlp.py builds that program).

Patterns (x, weights and biases are function arguments; every intermediate has one use; a
linear's weight may be an argument stored K x N read through `graph.transpose %w perm [1, 0]`,
Hugging Face's Conv1D, which its binding folds: `#graph.bind<transposed i>`):

    MLP     y = linear(act(linear(x, w1[, b1])), w2[, b2])   act: gelu "tanh" or none
    SwiGLU  y = linear(mul(silu(linear(x, wg)), linear(x, wu)), wd)   (LLaMA's MLP)
    Attention  q, k, v = split(linear(x, w_qkv[, b_qkv]))  (x: tokens x width, f16)
               y = linear(matmul(softmax(linear(q, k)) [scale s], v), w_out[, b_out])
               or with heads (tensor parallel: q, k, v may be narrower than x):
               qh = transpose(reshape(q, T x H x D), [1, 0, 2])  (kh, vh alike)
               y = linear(reshape(transpose(matmul(softmax(linear(qh, kh)), vh), [1, 0, 2]),
                          T x C), w_out[, b_out])
               x may be a batch of sequences, B x T x E (the views B x T x H x D, perm
               [0, 2, 1, 3]); softmax may be causal (torch's is_causal); kh and vh may each
               follow a KV cache, concat(k_cache, kh, dim -2) (fused form, not causal)

    Conv chain conv2d(relu?(conv2d(x, w1[, b1])), w2[, b2])   (3x3, stride 1, padding 1, f16,
               layout "NHWC": x N x H x W x C, filters K x 3 x 3 x C; ResNet's and VGG's pairs)

Attention becomes cuSync's chain of five kernels, each a stage on its own stream: the QKV GEMM,
S = q · kᵀ (wgmma; q and k read in place as column slices of the QKV temporary), the row
softmax of S · s (kernels/softmax.py; s: softmax's scale, attention's 1/sqrt(d)), O = P · v
(mma.sync: v is K x N; read in place) and the output GEMM, with a `sync.dependency` per
operand a stage reads from another: between consecutive stages, and from the QKV GEMM to P · v
for v. With heads, S and P hold them one under another (H·T x T) and a tile of q · kᵀ is one
head's (BM divides T), P · v computes O (T x C) with a tile per head's columns, and the
dependencies name each tile's head (cuSync's StridedSync between QKV and the dot kernel is
the map d0 mod (T / BM) of the first). A batch of B sequences multiplies every row count by B
(a tile is one sequence's; its q, k and v that sequence's rows of QKV); a causal softmax
excludes the keys past each row's query (S is still computed whole). Over a model width
(K >= LONG_K) the QKV and output GEMMs are the warp-specialized TMA kernels. With the option
`attention=fused` the middle three are one kernel (kernels/attention.py, FlashAttention-2's
forward on wgmma: S and P stay in registers, O is written as the chain writes it), a tile per
(query block, head) that reads the QKV tiles of its q and, key block by key block, of its
k and v (causal, beyond one wave: its tiles handed out heaviest first, `heaviest_first`); the
output GEMM waits for the heads of its k-steps' columns. Either form's stages are
`sync.wait_at_probe`: a tile waits for all the tiles it reads of a producer at once, before
its first load of them, instead of key block by key block. A query block launched early (PDL)
found them unposted and then paid a block-wide round trip at each key block: on an H200 the
fused program with PDL took 0.0995 ms at one head of T = 4096 where waiting at once took
0.0761, and less at every shape of the A/B (3-6% at GPT-3's and LLaMA's heads, 0.2-0.3% where
causal; bench/results/attention-wait-at-probe-ab-nvidia-h200.json). After a KV cache (k and
v each `graph.concat %cache, %new dim -2`, the cache an argument of the function) only the
fused form runs (`cached_attention_configs`, `cached_attention_dependencies`): its kernel reads
the caches as inputs, then the new tokens' keys and values from QKV.

The conv chain becomes two implicit-GEMM convs (kernels/conv2d.py, wgmma, bias and ReLU in
conv1's epilogue) with the dependency cuSync's Conv2DTileSync synchronizes, and the halo its
reference leaves out:
conv2's tile of BM output pixels at k-step s0 reads filter tap (r, s) of its k-tile, so input
pixel rows one above and one below its own: conv1's tile rows d0 - h .. d0 + h (h from the
image width and BM: `conv_halo`; rows past the grid are padding, `clipped`), in conv1's column
tile of the channels of s0. sync-verify checks that against the kernel's loads: it reads conv1's
NHW x K1 output as N x H x W x K1 (rows collapse). Layout: the kernel computes channels last, so
the pattern takes `graph.conv2d` with layout "NHWC" only, as a compiler takes a layout-assigned
program; an NCHW conv is refused at the op (a front end transposes at the piece's boundary:
frontend/torch permutes activations and filters with torch). Tiles that straddle images (an
image of H·W pixels neither a multiple nor a divisor of BM 64 or 128, e.g. 28x28) are refused:
their reads bound only by whole images.

What each kernel argument is, in terms of the function, is a `#graph.bind` on its stage
(`graph.bind`: input i, temp i, result i, gate_up i, j for the SwiGLU weight: the rows of
wg and wu interleaved in blocks of 8, the layout the GEMM's SwiGLU epilogue reads, or
transposed i for a weight the function transposes: the N x K matrix the GEMMs read); the module
keeps the function's type (`graph.signature`) and the temporaries' types (`graph.temps`).

An MLP of at least TMA_MIN_ROWS rows runs on the warp-specialized TMA GEMMs
(kernels/gemm_tma.py, sm_90a: TMA loads, a TMA-store epilogue) in the tiles of kernels/mlp.py
`tma_tiles` (the measured table for the bench's GPT-3 / LLaMA shapes, else the wave model's
first proposals that fit: GEMM2's BM a multiple of GEMM1's), each GEMM staging its output in
fewer boxes where that buys a stage (kernels/mlp.py DEEPER_STAGING); a binding of a TMA map
parameter carries the map's type (`#graph.bind<input 0 as !tile.tensor_map<...>>`), from which
the host encodes the map of the tensor it binds. Fewer rows take the wgmma configs of the MLP bench
(kernels/mlp.py default_configs): BM 64 for up to 64 rows, else 128; BK 64; GEMM1's BN keeps
the H columns of one tile a multiple of GEMM2's BK; up to STREAMING_ROWS (decoding) both GEMMs
stream their weights in kernels/choice.py `streaming_config`'s 16-row tiles (as do the
projections around attention after a KV cache). The dependency maps each k-step of GEMM2
onto the GEMM1 tiles that wrote its columns of H (kernels/mlp.py `dependency`). With
`persistent=true` an MLP's TMA GEMMs have no sync hooks and run as persistent grids in stream
order, with no dependency (kernels/mlp.py `mlp_persistent_module`): the faster form where tile
sync gains less than a block a tile costs (bench mlp's tma:persistent); so do a conv chain's
TMA convs with `persistent=true conv-pipeline=tma_ws` (`conv_chain_persistent_module`, bench
conv's tma:persistent). A piece no
pattern covers, an epilogue the GEMM does not compute, or a shape the kernels refuse is a
diagnostic at the op concerned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import func, gpu
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    MemRefType,
    ModuleOp,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass

from tilesync.analysis.occupancy import blocks_per_sm
from tilesync.analysis.wave_model import StageWaves
from tilesync.contract import WAIT_AT_PROBE_ATTR
from tilesync.dialects import graph, sync
from tilesync.dialects.locations import OpDiagnostic, diagnostic
from tilesync.dialects.tile import TensorMapType
from tilesync.kernels.attention import attention_combine_module, attention_module
from tilesync.kernels.builder import BlockBuilder
from tilesync.kernels.choice import (
    STREAMING_ROWS,
    TILE_COLUMNS,
    TILE_ROWS,
    propose_tma_configs,
    stages_for,
    streaming_config,
)
from tilesync.kernels.config import (
    H100_SMS,
    AttentionConfig,
    ConvConfig,
    GemmConfig,
    SoftmaxConfig,
    attention_config,
    conv2d_config,
    dtype_name,
    gemm_config,
    softmax_config,
    tma_ws_config,
)
from tilesync.kernels.conv2d import conv2d_module
from tilesync.kernels.gemm import ASource, TileOrigin, column_slice, gemm_module
from tilesync.kernels.mlp import (
    CONSUMER,
    PRODUCER,
    TMA_MIN_ROWS,
    MlpSpec,
    deeper_staging,
    default_configs,
    mlp_persistent_module,
    mlp_stage_module,
    output_tile,
    tma_tile_configs,
    tma_tiles,
)
from tilesync.kernels.softmax import softmax_module
from tilesync.transforms.graph.function import replace_function, signature_of, single_function

PASS = "graph-to-stages"


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
    transposed: frozenset[str] = frozenset()
    """The weights ("w1", "w2") the function reads transposed (stored K x N: `weight_bind`)."""

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
        if isinstance(value.owner, graph.TransposeOp):
            raise diagnostic(PASS, op, f"{what} is transposed: only an MLP's or attention's "
                                       "projection weight is read transposed")
        raise diagnostic(PASS, op, f"{what} must be an argument of @{fn.sym_name.data} "
                                   "(weights are the piece's inputs)")
    return value.index


def _weight(value: SSAValue, fn: func.FuncOp, op: Operation, what: str
            ) -> tuple[int, list[Operation]]:
    """(its argument, the ops) of a linear's weight: an argument (N x K, nn.Linear's), or one
    stored K x N (Hugging Face's Conv1D) read through `graph.transpose %w perm [1, 0]`, which
    its binding folds (`weight_bind`). A transposed tensor the piece computes is refused: the
    host transposes an argument, once per version of it, not an activation at every call."""
    transpose = value.owner if isinstance(value, OpResult) else None
    if not isinstance(transpose, graph.TransposeOp):
        return _arg(value, fn, op, what), []
    _producer(value, graph.TransposeOp, op, what)
    if transpose.permutation != (1, 0):
        raise diagnostic(PASS, transpose, f"{what} is transposed by perm "
                                          f"{list(transpose.permutation)}: a weight's "
                                          "transpose swaps its two dimensions (perm [1, 0])")
    source = transpose.input
    if not isinstance(source, BlockArgument) or source.block is not fn.body.block:
        raise diagnostic(PASS, transpose, f"{what} transposes a tensor the piece computes: "
                                          "only a weight, a function argument, is read "
                                          "transposed (the GEMMs have no transposed operand)")
    return source.index, [transpose]


def weight_bind(match: MlpMatch | AttentionMatch, role: str) -> graph.BindAttr:
    """The binding of the weight `role` names (w1, w2, w_qkv, w_out): its argument as it is
    (N x K), or `transposed` where the function transposes it (stored K x N)."""
    return graph.BindAttr("transposed" if role in match.transposed else "input",
                          getattr(match, role))


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
    try:
        return dtype_name(kind.element_type)
    except ValueError as err:
        raise diagnostic(PASS, op, str(err)) from err


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
    for linear in covered:
        if isinstance(linear, graph.LinearOp) and linear.batched:
            raise diagnostic(PASS, linear, "an MLP's linears take weight matrices, not one "
                                           "per batch")
    (w1, w1_ops), (w2, w2_ops) = (_weight(first.weight, fn, first, "the first weight"),
                                  _weight(second.weight, fn, second, "the second weight"))
    covered += w1_ops + w2_ops
    x_type = first.input.type
    assert isinstance(x_type, TensorType)
    shape = tuple(x_type.get_shape())
    hidden_type = second.input.type
    out_type = second.result.type
    assert isinstance(hidden_type, TensorType) and isinstance(out_type, TensorType)
    match = MlpMatch(
        x=_arg(first.input, fn, first, "the input"), w1=w1, w2=w2,
        b1=None if first.bias is None else _arg(first.bias, fn, first, "the first bias"),
        b2=None if second.bias is None else _arg(second.bias, fn, second, "the second bias"),
        gate_up=gate_up, activation=activation, rows=math.prod(shape[:-1]), k1=shape[-1],
        hidden=hidden_type.get_shape()[-1], n2=out_type.get_shape()[-1],
        dtype=_dtype(x_type, first), anchor=second,
        transposed=frozenset(role for role, ops in (("w1", w1_ops), ("w2", w2_ops)) if ops))
    extra = [op for op in body.ops if op not in covered]
    if extra:
        raise diagnostic(PASS, extra[0], f"{extra[0].name} is not part of the MLP pattern; "
                                         "a piece holds one pattern and nothing else")
    return match



def _tma_configs(match: MlpMatch, n1: int) -> tuple[GemmConfig, GemmConfig]:
    (bm1, bn1), (bm2, bn2) = tma_tiles(match.rows, match.k1, n1, match.hidden, match.n2,
                                       match.epilogue1, match.epilogue2, match.dtype)
    (t1, _, s1), (t2, _, s2) = tma_tile_configs((bm1, bn1, bm2, bn2), match.epilogue1)
    common = dict(dtype=match.dtype, sync_hooks=True, producer_warps=4, tma_store=True)
    configs = (tma_ws_config(match.rows, n1, match.k1, t1, s1, epilogue=match.epilogue1,
                             name=PRODUCER, **common),
               tma_ws_config(match.rows, match.n2, match.hidden, t2, s2,
                             epilogue=match.epilogue2, name=CONSUMER, **common))
    first, second = deeper_staging(configs)
    return first, second


def _wgmma_configs(match: MlpMatch, n1: int) -> tuple[GemmConfig, GemmConfig]:
    (t1, w1, s1), (t2, w2, s2) = default_configs("custom", match.rows, "wgmma")
    per_tile = t1[1] // (2 if match.activation == "swiglu" else 1)
    if per_tile % t2[2]:
        raise diagnostic(PASS, match.anchor, f"GEMM1's tile writes {per_tile} columns of the "
                                             f"hidden layer, not a multiple of BK {t2[2]}")
    return (gemm_config(match.rows, n1, match.k1, t1, w1, s1, dtype=match.dtype,
                        epilogue=match.epilogue1, name=PRODUCER, sync_hooks=True,
                        mma="wgmma", b_layout="col"),
            gemm_config(match.rows, match.n2, match.hidden, t2, w2, s2, dtype=match.dtype,
                        epilogue=match.epilogue2, name=CONSUMER, sync_hooks=True,
                        mma="wgmma", b_layout="col"))


def _streaming_configs(match: MlpMatch, n1: int) -> tuple[GemmConfig, GemmConfig]:
    return (streaming_config(match.rows, n1, match.k1, match.dtype, match.epilogue1,
                             PRODUCER, sync_hooks=True),
            streaming_config(match.rows, match.n2, match.hidden, match.dtype,
                             match.epilogue2, CONSUMER, sync_hooks=True))


def mlp_configs(match: MlpMatch) -> MlpSpec:
    """The two GEMMs' configs for the matched shapes (TMA kernels from TMA_MIN_ROWS rows,
    wgmma below, the streaming GEMMs up to STREAMING_ROWS); a diagnostic where the kernels
    cannot take them."""
    n1 = 2 * match.hidden if match.activation == "swiglu" else match.hidden
    for what, size in (("the input width", match.k1), ("the hidden width", match.hidden),
                       ("the output width", match.n2)):
        if size % 64:
            raise diagnostic(PASS, match.anchor, f"{what} {size} is not a multiple of 64 (the "
                                                 "GEMMs' k-tile and the dependency's step)")
    try:
        make = _tma_configs if match.rows >= TMA_MIN_ROWS else \
            _streaming_configs if match.rows <= STREAMING_ROWS else _wgmma_configs
        return MlpSpec("graph", match.rows, *make(match, n1))
    except ValueError as err:
        raise diagnostic(PASS, match.anchor, f"the generated GEMMs refuse this shape: {err}") \
            from err


def bindings(match: MlpMatch) -> dict[str, list[graph.BindAttr]]:
    """Each stage's kernel arguments (A, B, C[, bias]) as #graph.bind."""
    weight1 = graph.BindAttr("gate_up", *match.gate_up) if match.gate_up \
        else weight_bind(match, "w1")
    first = [graph.BindAttr("input", match.x), weight1, graph.BindAttr("temp", 0)]
    if match.b1 is not None:
        first.append(graph.BindAttr("input", match.b1))
    second = [graph.BindAttr("temp", 0), weight_bind(match, "w2"),
              graph.BindAttr("result", 0)]
    if match.b2 is not None:
        second.append(graph.BindAttr("input", match.b2))
    return {PRODUCER: first, CONSUMER: second}


# ---------------------------------------------------------------------------------------------
# Self-attention: one head over the rows of x, as a chain of five kernels
# ---------------------------------------------------------------------------------------------

QKV, SCORES, SOFTMAX, CONTEXT, OUT = "qkv", "scores", "softmax", "context", "out"
ATTENTION = "attention"  # the fused kernel's stage: q · kᵀ, softmax and P · v in one
COMBINE = "combine"  # the merge of a split attention's partial results (decoding)
ATTENTION_FORMS = ("chain", "fused")  # graph-to-stages' `attention` option
CONTEXT_BN = (16, 32)  # P · v's columns a tile: the narrower where a wave holds it (context_tile)
CONTEXT_STAGES = 8  # P · v's cp.async ring (context_tile)
QKV_OUT_BN = 64  # the QKV and output GEMMs' columns a tile (attention_configs)
LONG_K = 512
"""From this K on (8 k-steps: a model's width, heads over a wider x under tensor parallelism)
a projection is a GEMM's main loop, not a tile's latency: the warp-specialized TMA kernel (the
MLP's) in tiles `projection_width` wide (`_projection_config`)."""
PROJECTION_WIDTHS = (128, 192, 256)
"""The tile widths a long-K projection chooses among (`projection_width`): multiples of the
64-column k-step its dependencies count in (a q or k k-step then lies in one tile). On an H200
(attention-heads-profile-nvidia-h200, 128 / 192 / 256 for both projections, row+pdl) GPT-3
heads at T = 512, 1024, 2048 took 173.6 / 148.4 / 180.3, 285.4 / 287.6 / 336.4 and 664.1 /
641.6 / 633.5 us, LLaMA's 78.0 / 100.3 / 113.5, 148.8 / 143.8 / 153.0 and 354.2 / 350.7 /
340.0: the fastest width is the one whose tiles leave the fewest idle SM slots."""
def projection_width(m: int, n: int, bm: int) -> int:
    """The PROJECTION_WIDTHS tile width whose waves of tiles (a block an SM) take the fewest
    column-widths of time, the narrower on a tie: time ~ waves x BN for a tile's fixed K."""
    def time(bn: int) -> tuple[int, int]:
        tiles = -(-m // bm) * -(-n // bn)
        return StageWaves(tiles, 1, H100_SMS).wave_count * bn, bn
    return min(PROJECTION_WIDTHS, key=time)


@dataclass(frozen=True)
class AttentionMatch:
    """A matched self-attention block: function argument indices (None: absent) and sizes."""

    x: int
    w_qkv: int
    b_qkv: int | None
    w_out: int
    b_out: int | None
    tokens: int  # T: a sequence's rows of x
    width: int  # C: q, k and v each T x C (the heads side by side)
    dtype: str
    scale: float  # softmax's: P = softmax(S · scale)
    anchor: Operation  # the output linear: where diagnostics point
    model_width: int  # E: x's columns and y's (the QKV GEMM's K, the output GEMM's N)
    heads: int = 1  # H: q, k and v viewed as H heads of C / H columns
    sequences: int = 1  # B: x is B x T x E (a batch of sequences), else T x E
    causal: bool = False  # softmax's causal mask: key j > query i excluded
    transposed: frozenset[str] = frozenset()
    """The weights ("w_qkv", "w_out") the function reads transposed (stored K x N)."""
    cached: int = 0
    """S': each sequence's earlier tokens whose keys and values come from a KV cache (k and v
    are cat([cache, new], dim=-2)): `tokens` are the new ones."""
    k_cache: int | None = None  # the caches' argument indices ([B x] H x S' x D)
    v_cache: int | None = None

    @property
    def head_width(self) -> int:
        """D = C / H: the columns of one head."""
        return self.width // self.heads


def _result_of(value: SSAValue, kind: type[Operation], op: Operation, what: str) -> Operation:
    """The op of `kind` defining `value`, which may have other uses (split's results)."""
    owner = value.owner if isinstance(value, OpResult) else None
    if not isinstance(owner, kind):
        found = owner.name if isinstance(owner, Operation) else "a function argument"
        raise diagnostic(PASS, op, f"{what} must come from {kind.name}, found {found}")
    return owner


def _is_heads_perm(transpose: graph.TransposeOp) -> bool:
    return transpose.permutation == graph.HEADS_PERM.get(len(transpose.permutation))


def _merged_heads(value: SSAValue, op: Operation) -> tuple[SSAValue, list[Operation]]:
    """(the [B x] heads x T x D tensor, the ops) where `value` is it merged back into
    [B x] T x C by reshape(transpose(·, graph.HEADS_PERM)); else (value, [])."""
    reshape = value.owner if isinstance(value, OpResult) else None
    if not isinstance(reshape, graph.ReshapeOp):
        return value, []
    _producer(value, graph.ReshapeOp, op, "the attention output")
    transpose = _producer(reshape.input, graph.TransposeOp, reshape, "the merged heads")
    assert isinstance(transpose, graph.TransposeOp)
    merged = TensorType.get_shape(reshape.result.type)  # type: ignore[arg-type]
    viewed = TensorType.get_shape(transpose.result.type)  # type: ignore[arg-type]
    if not _is_heads_perm(transpose) or \
            list(merged) != [*viewed[:-2], viewed[-2] * viewed[-1]]:
        raise diagnostic(PASS, transpose, "the heads merge back as o.transpose(-3, -2) (perm "
                                          "[1, 0, 2]; a batch: [0, 2, 1, 3]) reshaped to "
                                          "[batch x] tokens x width")
    return transpose.input, [reshape, transpose]


def _split_heads(value: SSAValue, op: Operation, what: str
                 ) -> tuple[SSAValue, int, list[Operation]]:
    """(the [B x] T x C tensor, H, the ops) where `value` is it viewed as heads,
    transpose(reshape(·, [B x] T x H x D), graph.HEADS_PERM); else (value, 1, [])."""
    transpose = value.owner if isinstance(value, OpResult) else None
    if not isinstance(transpose, graph.TransposeOp):
        return value, 1, []
    _producer(value, graph.TransposeOp, op, what)
    if not _is_heads_perm(transpose):
        raise diagnostic(PASS, transpose, f"{what}'s heads are x.view(T, H, D).transpose(0, 1) "
                                          "(perm [1, 0, 2]; a batch: x.view(B, T, H, D)"
                                          ".transpose(1, 2), perm [0, 2, 1, 3])")
    reshape = _producer(transpose.input, graph.ReshapeOp, transpose, f"{what}'s heads")
    assert isinstance(reshape, graph.ReshapeOp)
    source = TensorType.get_shape(reshape.input.type)  # type: ignore[arg-type]
    viewed = TensorType.get_shape(reshape.result.type)  # type: ignore[arg-type]
    if len(source) not in (2, 3) or len(viewed) != len(source) + 1 or \
            list(viewed[:-2]) != list(source[:-1]):
        raise diagnostic(PASS, reshape, f"{what} views [batch x] tokens x width as [batch x] "
                                        f"tokens x heads x (width / heads), got "
                                        f"{list(source)} -> {list(viewed)}")
    return reshape.input, viewed[-2], [transpose, reshape]


def _after_cache(value: SSAValue, fn: func.FuncOp, what: str
                 ) -> tuple[SSAValue, int | None, list[Operation], int]:
    """(the new tokens' keys or values, the cache's argument index, the ops, S') where
    `value` is cat([cache, new], dim=-2) (decoding with a KV cache, the cached tokens first);
    else (value, None, [], 0)."""
    concat = value.owner if isinstance(value, OpResult) else None
    if not isinstance(concat, graph.ConcatOp):
        return value, None, [], 0
    rank = len(TensorType.get_shape(concat.result.type))  # type: ignore[arg-type]
    if len(concat.inputs) != 2 or concat.dim.value.data not in (-2, rank - 2) or \
            not isinstance(concat.inputs[0], BlockArgument):
        raise diagnostic(PASS, concat, f"{what} after a KV cache is cat([{what}_cache, {what}], "
                                       "dim=-2): the cached tokens (an argument of the piece), "
                                       "then the new ones")
    cache = concat.inputs[0]
    index = _arg(cache, fn, concat, f"the {what} cache")
    cached = TensorType.get_shape(cache.type)[-2]  # type: ignore[arg-type]
    return concat.inputs[1], index, [concat], cached


def match_attention(fn: func.FuncOp) -> AttentionMatch:
    """y = linear(matmul(softmax(linear(q, k)), v), w_out[, b_out]) with q, k, v = split(
    linear(x, w_qkv[, b_qkv])); or with heads, y = linear(merge(matmul(softmax(linear(qh,
    kh)), vh)), w_out[, b_out]) where qh = transpose(reshape(q, T x H x D), [1, 0, 2]) (the
    same for k and v) and merge(o) = reshape(transpose(o, [1, 0, 2]), T x C); x may be a batch
    of sequences, B x T x E (the views then B x T x H x D, perm [0, 2, 1, 3]); softmax may be
    causal. A diagnostic where the function does not fit."""
    ret = fn.body.block.last_op
    if not isinstance(ret, func.ReturnOp) or len(ret.arguments) != 1:
        raise diagnostic(PASS, ret or fn, "a piece returns exactly one tensor")
    out = _producer(ret.arguments[0], graph.LinearOp, ret, "the result")
    assert isinstance(out, graph.LinearOp)
    context_value, merge_ops = _merged_heads(out.input, out)
    context = _producer(context_value, graph.MatmulOp, merge_ops[-1] if merge_ops else out,
                        "the attention output")
    assert isinstance(context, graph.MatmulOp)
    probs = _producer(context.lhs, graph.SoftmaxOp, context, "the attention weights")
    assert isinstance(probs, graph.SoftmaxOp)
    scores = _producer(probs.input, graph.LinearOp, probs, "softmax's input")
    assert isinstance(scores, graph.LinearOp)
    rank = len(TensorType.get_shape(probs.input.type))  # type: ignore[arg-type]
    if probs.dim.value.data not in (-1, rank - 1):
        raise diagnostic(PASS, probs, "attention's softmax runs along the keys (dim -1)")
    if scores.bias is not None:
        raise diagnostic(PASS, scores, "q · kᵀ takes no bias")
    # k and v after caches of as many tokens, or neither: else the products' shapes differ
    k_new, k_cache, k_cat, k_cached = _after_cache(scores.weight, fn, "k")
    v_new, v_cache, v_cat, _ = _after_cache(context.rhs, fn, "v")
    if k_cache is not None and probs.is_causal:
        raise diagnostic(PASS, probs, "a causal mask after a KV cache: graph.softmax's is "
                                      "torch's is_causal, aligned top left, under which a new "
                                      "token would not see the cache (one new token needs no "
                                      "mask)")
    (q, hq, q_ops), (k, hk, k_ops), (v, hv, v_ops) = (
        _split_heads(scores.input, scores, "q"), _split_heads(k_new, scores, "k"),
        _split_heads(v_new, context, "v"))
    heads = hq
    if not hk == hv == heads or not (bool(q_ops) == bool(k_ops) == bool(v_ops) ==
                                     bool(merge_ops)):
        raise diagnostic(PASS, context, "q, k and v are viewed as the same number of heads, "
                                        "and the heads merge back before the output linear")
    split = _result_of(q, graph.SplitOp, scores, "q")
    assert isinstance(split, graph.SplitOp)
    if len(split.outputs) != 3 or tuple(split.outputs) != (q, k, v):
        raise diagnostic(PASS, split, "attention splits the QKV projection into q, k, v, in "
                                      "that order, and computes softmax(q · kᵀ) · v")
    if any(r.uses.get_length() != 1 for r in split.outputs):
        raise diagnostic(PASS, split, "q, k and v are each read once, inside the piece")
    qkv = _producer(split.input, graph.LinearOp, split, "the split")
    assert isinstance(qkv, graph.LinearOp)
    x_type = qkv.input.type
    assert isinstance(x_type, TensorType)
    if len(x_type.get_shape()) not in (2, 3):
        raise diagnostic(PASS, qkv, "attention takes one sequence, tokens x width, or a batch "
                                    "of them, batch x tokens x width")
    *batch, tokens, model_width = x_type.get_shape()
    width = TensorType.get_shape(q.type)[-1]  # type: ignore[arg-type]
    if width * 3 != TensorType.get_shape(split.input.type)[-1] or \
            split.dim.value.data not in (-1, len(x_type.get_shape()) - 1):
        raise diagnostic(PASS, split, "the QKV projection splits into three equal widths "
                                      "along its last dimension")
    dtype = _dtype(x_type, qkv)
    if dtype != "f16":
        raise diagnostic(PASS, probs, "the softmax kernel takes f16, not bf16")
    (w_qkv, qkv_ops), (w_out, out_ops) = (_weight(qkv.weight, fn, qkv, "the QKV weight"),
                                          _weight(out.weight, fn, out, "the output weight"))
    covered = {qkv, split, scores, probs, context, out, ret, *merge_ops, *q_ops, *k_ops,
               *v_ops, *qkv_ops, *out_ops, *k_cat, *v_cat}
    extra = [op for op in fn.body.block.ops if op not in covered]
    if extra:
        raise diagnostic(PASS, extra[0], f"{extra[0].name} is not part of the attention "
                                         "pattern; a piece holds one pattern and nothing else")
    return AttentionMatch(
        x=_arg(qkv.input, fn, qkv, "the input"), w_qkv=w_qkv,
        b_qkv=None if qkv.bias is None else _arg(qkv.bias, fn, qkv, "the QKV bias"),
        w_out=w_out,
        b_out=None if out.bias is None else _arg(out.bias, fn, out, "the output bias"),
        tokens=tokens, width=width, dtype=dtype, scale=probs.scale_value, anchor=out,
        model_width=model_width, heads=heads, sequences=batch[0] if batch else 1,
        causal=probs.is_causal,
        transposed=frozenset(role for role, ops in (("w_qkv", qkv_ops), ("w_out", out_ops))
                             if ops),
        cached=k_cached, k_cache=k_cache, v_cache=v_cache)


class _AttentionSizes:
    """T, C and D of an attention program, from its QKV GEMM ([B·]T x 3C) and its heads."""

    qkv: GemmConfig
    heads: int
    sequences: int

    @property
    def tokens(self) -> int:
        """T: one sequence's tokens."""
        return self.qkv.M // self.sequences

    @property
    def width(self) -> int:
        """C = H·D: q, k and v each T x C."""
        return self.qkv.N // 3

    @property
    def head_width(self) -> int:
        return self.width // self.heads

    @property
    def kernels(self) -> tuple:
        return ()

    @property
    def target(self) -> str | None:
        """The PTX target its kernels need beyond the device's own (wgmma: sm_90a)."""
        return next((cfg.target for cfg in self.kernels if cfg.target is not None), None)


@dataclass(frozen=True)
class AttentionSpec(_AttentionSizes):
    """The five kernels' configs: QKV = x · w_qkvᵀ; S = q · kᵀ (q, k read in place as column
    slices of QKV); P = softmax(S · scale); O = P · v (v in place); y = O · w_outᵀ.

    With H heads, S and P hold the heads one under another (head h: rows h·T .. h·T + T - 1,
    H·T x T): a tile of q · kᵀ is one head's (BM divides T), whose q and k are QKV's columns
    h·D .. of its first two thirds. P · v computes O, T x C, the heads side by side: its tile
    (BN divides D) is head h = n0 / D's, reading P's rows of that head and v's columns in
    place; the output GEMM reads O as it is.

    With a batch of B sequences every row count is B times as many: x, QKV, O and y are B·T
    rows (sequence b at rows b·T ..), S and P B·H·T (sequence b's head h at rows (b·H + h)·T ..),
    and a tile (BM divides T) is one sequence's: q, k and v are read at its rows of QKV."""

    qkv: GemmConfig
    scores: GemmConfig
    softmax: SoftmaxConfig
    context: GemmConfig
    out: GemmConfig
    heads: int = 1
    sequences: int = 1

    @property
    def gemms(self) -> tuple[GemmConfig, ...]:
        """The chain's GEMMs, in order (the cost model's stages)."""
        return (self.qkv, self.scores, self.context, self.out)

    @property
    def kernels(self) -> tuple:
        return (self.qkv, self.scores, self.softmax, self.context, self.out)


def attention_configs(match: AttentionMatch) -> AttentionSpec:
    """wgmma GEMMs where B is N x K (weights, kᵀ), mma.sync for P · v (v is K x N); every GEMM
    with the same BM, so tile row d0 means the same token rows along the chain.

    q · kᵀ has two k-steps (K = C = 128) and a T x T output: its tile leaves through shared
    memory in whole rows (staged_store) with 3 stages (it needs 2; the third is wgmma's), not
    by the accumulators' scattered 4-byte stores. P · v has a few column tiles of C and a long
    K = T: 16 or 32 columns a tile (context_tile), one warp a 32-row slab, 64-wide k-steps. On
    an H200 at T = 512 .. 4096 (CUPTI, the kernels without hooks; 32 columns, 4 stages) these
    took q · kᵀ from 4.1-39.3 us to 2.8-17.0 and
    P · v from 6.4-38.4 us to 4.1-23.9 against the 128 x 64 tile of the MLP's defaults.

    The QKV and output GEMMs (K = C) have two k-steps a tile, so a tile's time is its latency:
    narrow tiles (BN = 64, six and two of them per tile row) that leave through shared memory
    (staged_store) took them from 7.2-8.0 and 4.0-4.4 us to 2.1-3.2 and 2.0-2.3 (cuBLAS:
    2.3-3.3 and 2.2-2.6) on the H200 against the MLP's 128 x 256 and 128 x 128 tiles."""
    t, c, e, h, d = (match.tokens, match.width, match.model_width, match.heads,
                     match.head_width)
    b = match.sequences
    if match.cached:
        raise diagnostic(PASS, match.anchor, "attention after a KV cache runs as the fused "
                                             "kernel (graph-to-stages{attention=fused}), which "
                                             "reads the caches; the chain's q · kᵀ reads k "
                                             "from QKV only")
    for what, columns in (("the model width", e), ("the head width", d)):
        if columns % 64:
            raise diagnostic(PASS, match.anchor, f"{what} {columns} is not a multiple of 64 "
                                                 "(the GEMMs' k-tile and the dependency's "
                                                 "step)")
    if t % 32 or t > 4096:
        raise diagnostic(PASS, match.anchor, f"{t} tokens: the softmax kernel takes a multiple "
                                             "of 32 up to 4096")
    (t1, w1, _), (t4, w4, _) = default_configs("custom", t, "wgmma")
    bm = t1[0]
    if h > 1 and t % bm:
        raise diagnostic(PASS, match.anchor, f"{t} tokens with {h} heads: a tile of q · kᵀ is "
                                             f"one head's, so {bm} rows a tile must divide T")
    if b > 1 and t % bm:
        raise diagnostic(PASS, match.anchor, f"a batch of {b} sequences of {t} tokens: a tile "
                                             f"is one sequence's, so {bm} rows a tile must "
                                             "divide T")
    try:
        def gemm(name, m, n, k, tile, warps, stages, epilogue=None, mma="wgmma",
                 staged=False, triangular_a=0, triangular_c=0):
            return gemm_config(m, n, k, tile, warps, stages, dtype=match.dtype,
                               epilogue=epilogue, name=name, sync_hooks=True, mma=mma,
                               b_layout="col" if mma == "wgmma" else "row",
                               staged_store=staged, triangular_a=triangular_a,
                               triangular_c=triangular_c)

        spec = AttentionSpec(
            qkv=_projection_config(QKV, match, b * t, 3 * c, e, bm, w1,
                                   "bias" if match.b_qkv is not None else None),
            # BN = BM: a scores tile column reads the k rows of one QKV tile row
            # causal: a tile wholly above the diagonal is masked whole (computes nothing)
            scores=gemm(SCORES, b * h * t, t, d, (bm, bm, 64), w4, 3, staged=True,
                        triangular_c=t if match.causal else 0),
            softmax=softmax_config(b * h * t, t, name=SOFTMAX, sync_hooks=True,
                                   scale=match.scale, causal=match.causal),
            # causal: P is zero past each query, so a tile's k-loop ends at its last row's
            context=gemm(CONTEXT, b * t, c, t, context_tile(b * t, c, bm), (bm // 32, 1),
                         CONTEXT_STAGES, mma="sync", triangular_a=t if match.causal else 0),
            out=_projection_config(OUT, match, b * t, e, c, t4[0], w4,
                                   "bias" if match.b_out is not None else None),
            heads=h, sequences=b)
    except ValueError as err:
        raise diagnostic(PASS, match.anchor, f"the generated kernels refuse this shape: {err}") \
            from err
    assert spec.context.tile[0] == bm == spec.out.tile[0], "default_configs keep BM equal"
    return spec


def _projection_config(name: str, match: AttentionMatch, m: int, n: int, k: int, bm: int,
                       warps: tuple[int, int], epilogue: str | None) -> GemmConfig:
    """The QKV or output GEMM, M x N x K: from K = LONG_K the warp-specialized TMA GEMM in
    tiles `projection_width` wide, as many stages as fit beside its staging buffer; below, K is
    one head's few k-steps and the cp.async wgmma GEMM in QKV_OUT_BN-wide staged tiles (3
    stages)."""
    if k >= LONG_K:
        bn = projection_width(m, n, bm)
        return tma_ws_config(m, n, k, (bm, bn, 64), stages_for(bm, bn, bn), dtype=match.dtype,
                             epilogue=epilogue, name=name, sync_hooks=True, producer_warps=4,
                             tma_store=True)
    return gemm_config(m, n, k, (bm, QKV_OUT_BN, 64), warps, 3, dtype=match.dtype,
                       epilogue=epilogue, name=name, sync_hooks=True, mma="wgmma",
                       b_layout="col", staged_store=True)


def context_tile(rows: int, width: int, bm: int) -> tuple[int, int, int]:
    """P · v's tile: its K = T is long, so a tile's time is most of the kernel's. The narrower
    CONTEXT_BN where its tiles still fit one wave (more of the SMs busy), else the wider; with
    CONTEXT_STAGES (8 x 18-20 KiB: one block an SM). Under PDL the context blocks become
    resident while the softmax still runs, and two of them on one SM take twice as long on the
    critical path. On an H200 (row+pdl, C = 128, T = 512 / 1024 / 2048 / 4096) the 32-wide,
    4-stage tile took 19.4 / 23.6 / 39.0 / 90.6 us; 16-wide with 8 stages 17.8 / 22.0 / 32.6 /
    99.4 (T = 4096: 256 tiles, two waves); 32-wide with 8 stages 19.0 / 23.9 / 34.2 / 83.0;
    fewer stages (16-wide: 4, 6, 7) took 1.0-7.9 us longer."""
    narrow, wide = CONTEXT_BN
    tile_rows = -(-rows // bm)
    bn = narrow if tile_rows * (width // narrow) <= H100_SMS else wide  # width: a multiple of 64
    return (bm, bn, 64)


def _ratio(expr: AffineExpr, ratio: int) -> AffineExpr:
    return expr if ratio == 1 else expr // ratio


def _remainder(expr: AffineExpr, modulus: int) -> AffineExpr:
    return AffineExpr.constant(0) if modulus == 1 else expr % modulus


def attention_dependencies(spec: AttentionSpec) -> list[sync.DependencyOp]:
    """Which producer tiles each consumer tile reads, per operand (d: consumer tile, s0: the
    k-step of the load point, s1: a range of producer tiles). With heads, a tile row d0 of
    q · kᵀ is head d0 floordiv (T / BM)'s token rows d0 mod (T / BM); a tile column d1 of
    P · v is head d1 floordiv (D / BN) (P · v and O are T x C, as with one head). With a batch,
    a tile row of q · kᵀ is sequence d0 floordiv (H·T / BM)'s, one of P · v sequence
    d0 floordiv (T / BM)'s: its q, k and v are that sequence's rows of QKV."""
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    s0, s1 = AffineExpr.symbol(0), AffineExpr.symbol(1)
    width, heads = spec.width, spec.heads
    bm, bn1, _ = spec.qkv.tile
    bk2 = spec.scores.tile[2]
    _, bn3, bk3 = spec.context.tile
    bk4 = spec.out.tile[2]
    per_softmax = bm // spec.softmax.warps  # softmax tiles (blocks) per row of tiles
    qkv_column = bn1 // bk2  # k-steps of the scores GEMM per QKV tile column
    v_row = _ratio(s0, bm // bk3)  # the QKV tile row of P · v's k-step s0 in its sequence
    if heads == 1 and spec.sequences == 1:
        token_row, key_row, q_step, p_row = d0, d1, s0, d0
    else:  # BM divides T: T / BM tile rows a sequence's head (of S and P, B·H·T x T)
        token_tiles = spec.tokens // bm
        group = _ratio(d0, token_tiles)  # of q · kᵀ: sequence b's head h is group b·H + h
        head = _remainder(group, heads) if spec.sequences > 1 else group
        token_row, key_row, q_step, p_row = _remainder(d0, token_tiles), d1, s0, d0
        o_head = _ratio(d1, spec.head_width // bn3)  # of P · v's tile column
        if heads > 1:
            q_step = head * (spec.head_width // bk2) + s0
            p_row = o_head * token_tiles + d0
        if spec.sequences > 1:  # the tile's sequence's first tile row of QKV (and of O)
            first = _ratio(d0, token_tiles * heads) * token_tiles
            token_row, key_row = first + token_row, first + d1
            sequence = _ratio(d0, token_tiles)  # of P · v's tile row
            v_row = sequence * token_tiles + v_row
            if heads > 1:
                p_row = (sequence * (heads - 1) + o_head) * token_tiles + d0
    return [
        # q: row d0 of QKV, the column tile of k-step s0 (head h: columns h·D + 64 s0)
        sync.DependencyOp(QKV, SCORES, 0, AffineMap(2, 1, (token_row,
                                                           _ratio(q_step, qkv_column))),
                          [(0, spec.scores.k_tiles)]),
        # k: row d1 of QKV (BN of scores = BM), columns width + h·D + 64 s0
        sync.DependencyOp(QKV, SCORES, 1, AffineMap(2, 1, (
            key_row, _ratio(q_step + width // bk2, qkv_column))), [(0, spec.scores.k_tiles)]),
        # a softmax block reads its rows of S, every column tile
        sync.DependencyOp(SCORES, SOFTMAX, 0, AffineMap(2, 1, (_ratio(d0, per_softmax), s0)),
                          [(0, spec.scores.tile_grid[1])]),
        # P: the softmax blocks of tile row d0 of the tile's head (the last row of tiles may
        # reach past T)
        sync.DependencyOp(SOFTMAX, CONTEXT, 0, AffineMap(2, 2, (p_row * per_softmax + s1,
                                                                AffineExpr.constant(0))),
                          [(0, spec.context.k_tiles), (0, per_softmax)],
                          clipped=spec.softmax.rows % bm != 0),
        # v: rows 32 s0 of QKV, columns 2 width + BN3 d1 (one QKV tile: BN3 divides BN1)
        sync.DependencyOp(QKV, CONTEXT, 1, AffineMap(2, 1, (
            v_row, _ratio(d1 + 2 * width // bn3, bn1 // bn3))),
            [(0, spec.context.k_tiles)]),
        # O: row d0 of the context GEMM, the column tiles of k-step s0 (one spans several
        # k-steps, or a k-step several tiles)
        sync.DependencyOp(CONTEXT, OUT, 0, AffineMap(2, 1, (d0, _ratio(s0, bn3 // bk4))),
                          [(0, spec.out.k_tiles)]) if bn3 >= bk4 else
        sync.DependencyOp(CONTEXT, OUT, 0, AffineMap(2, 2, (d0, s0 * (bk4 // bn3) + s1)),
                          [(0, spec.out.k_tiles), (0, bk4 // bn3)]),
    ]


def head_rows(tokens: int, head_width: int, heads: int = 1, batched: bool = False) -> ASource:
    """q read in place from QKV as the A operand of q · kᵀ: its row r (of [B·]H·T) is token
    r mod T of head r / T, at QKV's columns h·D ..; `batched`: head (r / T) mod H of sequence
    r / (H·T), whose tokens are QKV's rows from T times that."""
    def source(body: BlockBuilder, row: SSAValue, col: SSAValue, origin: TileOrigin
               ) -> tuple[list[SSAValue], bool]:
        group = body.divui(row, tokens)
        token = body.remui(row, tokens)
        if not batched:
            return [token, body.addi(col, body.muli(group, head_width))], True
        first = body.muli(body.divui(group, heads), tokens)
        head = body.remui(group, heads)
        return [body.addi(first, token), body.addi(col, body.muli(head, head_width))], True

    return source


def row_head_columns(tokens: int, head_width: int, offset: int, heads: int = 1,
                     batched: bool = False) -> ASource:
    """k read in place from QKV (T x 3C) as the B operand of q · kᵀ: its rows are tokens, its
    columns the tile's head's, h = m0 / T (m0: the tile's first row of H·T), at offset + h·D;
    `batched`: head (m0 / T) mod H of sequence m0 / (H·T), at that sequence's rows."""
    def source(body: BlockBuilder, row: SSAValue, col: SSAValue, origin: TileOrigin
               ) -> tuple[list[SSAValue], bool]:
        group = body.divui(origin[0], tokens)
        head = group if not batched else body.remui(group, heads) if heads > 1 else None
        if batched:
            sequence = body.divui(group, heads) if heads > 1 else group
            row = body.addi(body.muli(sequence, tokens), row)
        col = body.addi(col, offset)
        return [row, col if head is None else body.addi(col, body.muli(head, head_width))], True

    return source


def column_head_rows(tokens: int, head_width: int, heads: int = 1,
                     batched: bool = False) -> ASource:
    """P (H·T x T, the heads one under another) as the A operand of P · v: the rows of the
    tile's head, h = n0 / D (n0: the tile's first column of O, T x C); `batched`: O is B·T x
    C and row r is token r mod T of sequence b = r / T, P's row (b·H + h)·T + r mod T."""
    def source(body: BlockBuilder, row: SSAValue, col: SSAValue, origin: TileOrigin
               ) -> tuple[list[SSAValue], bool]:
        head = body.divui(origin[1], head_width)
        if not batched:
            return [body.addi(body.muli(head, tokens), row), col], True
        group = body.addi(body.muli(body.divui(row, tokens), heads), head)
        return [body.addi(body.muli(group, tokens), body.remui(row, tokens)), col], True

    return source


def sequence_rows(tokens: int, offset: int) -> ASource:
    """v read in place from QKV (B·T x 3C) as the B operand (K x N) of P · v with a batch:
    key row k of the tile's sequence, b = m0 / T (m0: the tile's first row of O), is QKV's
    row b·T + k, at columns offset .."""
    def source(body: BlockBuilder, row: SSAValue, col: SSAValue, origin: TileOrigin
               ) -> tuple[list[SSAValue], bool]:
        first = body.muli(body.divui(origin[0], tokens), tokens)
        return [body.addi(first, row), body.addi(col, offset)], True

    return source


def attention_stage_module(spec: AttentionSpec) -> ModuleOp:
    """The five kernels, their stages, the dependencies and the launches: each kernel on its
    own stream, producers at higher priority (the chain's order)."""
    t, c, d, h = spec.tokens, spec.width, spec.head_width, spec.heads
    batched = spec.sequences > 1
    qkv_type = MemRefType(spec.qkv.element_type, [spec.qkv.M, spec.qkv.N])
    v_source = sequence_rows(t, 2 * c) if batched else column_slice(2 * c)
    if h == 1 and not batched:
        q_source, k_source, p_type, p_source = column_slice(0), column_slice(c), None, None
    else:
        q_source = head_rows(t, d, h, batched) if h > 1 else column_slice(0)
        k_source = row_head_columns(t, d, c, h, batched)
        p_type, p_source = None, None  # one head: P is B·T x T, read as it is
        if h > 1:
            p_type = MemRefType(spec.context.element_type, [spec.softmax.rows, t])
            p_source = column_head_rows(t, d, h, batched)
    kernels = [
        gemm_module(0, 0, 0, config=spec.qkv),
        gemm_module(0, 0, 0, config=spec.scores, a_type=qkv_type, a_source=q_source,
                    b_type=qkv_type, b_source=k_source),
        softmax_module(spec.softmax),
        gemm_module(0, 0, 0, config=spec.context, a_type=p_type, a_source=p_source,
                    b_type=qkv_type, b_source=v_source),
        gemm_module(0, 0, 0, config=spec.out),
    ]
    ops: list[Operation] = [op.clone() for module in kernels for op in module.ops]
    for cfg in (spec.qkv, spec.scores):
        ops.append(sync.StageOp(cfg.name, [f"{cfg.name}_module", cfg.name], cfg.grid[:2],
                                cfg.block, output_tile(cfg)))
    sm = spec.softmax
    ops.append(sync.StageOp(sm.name, [f"{sm.name}_module", sm.name], sm.grid[:2], sm.block,
                            sm.tile))
    for cfg in (spec.context, spec.out):
        ops.append(sync.StageOp(cfg.name, [f"{cfg.name}_module", cfg.name], cfg.grid[:2],
                                cfg.block, output_tile(cfg)))
    ops += attention_dependencies(spec)
    _wait_at_probes(ops)
    names = (QKV, SCORES, SOFTMAX, CONTEXT, OUT)
    ops += [sync.LaunchOp(name, stream=i, priority=i - len(names) + 1)
            for i, name in enumerate(names)]
    return ModuleOp(ops)


def attention_bindings(match: AttentionMatch) -> dict[str, list[graph.BindAttr]]:
    """Kernel arguments: temps 0 QKV ([B·]T x 3C), 1 S, 2 P (T x T; B·H x T x T), 3 O
    ([B·]T x C, the heads side by side)."""
    def bias(index: int | None) -> list[graph.BindAttr]:
        return [] if index is None else [graph.BindAttr("input", index)]

    temp = [graph.BindAttr("temp", i) for i in range(4)]
    return {QKV: [graph.BindAttr("input", match.x), weight_bind(match, "w_qkv"),
                  temp[0], *bias(match.b_qkv)],
            SCORES: [temp[0], temp[0], temp[1]],
            SOFTMAX: [temp[1], temp[2]],
            CONTEXT: [temp[2], temp[0], temp[3]],
            OUT: [temp[3], weight_bind(match, "w_out"), graph.BindAttr("result", 0),
                  *bias(match.b_out)]}


# Fused: QKV -> attention (kernels/attention.py: S and P stay in registers) -> output GEMM


@dataclass(frozen=True)
class FusedAttentionSpec(_AttentionSizes):
    """QKV = x · w_qkvᵀ; O = softmax(q · kᵀ · scale) · v per head in one kernel (q, k, v read
    in place from QKV, O T x C with the heads side by side, as the chain's); y = O · w_outᵀ.
    A tile of the attention stage is (query block, head); with a batch, rows are B·T and a
    block one sequence's."""

    qkv: GemmConfig
    attention: AttentionConfig
    out: GemmConfig
    heads: int = 1
    sequences: int = 1

    @property
    def gemms(self) -> tuple[GemmConfig, ...]:
        return (self.qkv, self.out)

    @property
    def kernels(self) -> tuple:
        return (self.qkv, self.attention, self.out)


def fused_attention_tile(rows: int, heads: int, head_width: int, tokens: int
                         ) -> tuple[int, int]:
    """The attention kernel's (query block, key block). Heads of 128: 128 x 128 (two
    warpgroups, one block an SM) where 128-row blocks give at least half the SMs one, else
    64 x 128 (one warpgroup, one block an SM: fewer, longer blocks would leave SMs idle); keys
    64 at a time where T is no multiple of 128. Heads of 64: 64 x 64 (two blocks an SM). On an
    H200 (wgmma, CUDA-graph timings) 12 heads of 128 at T = 1024 / 2048 took 25.3 / 86.7 us at
    128 x 128, 26.8 / 94.6 at 64 x 64 and 36.4 / 99.8 at 64 x 128; one head at T = 2048 /
    4096 33.8 / 63.8 us at 64 x 128 against 43.0 / 81.3 at 128 x 128; causal, 8 / 12 heads of
    128 at T = 2048 51.0 / 75.2 us at 128 x 128 against 52.4 / 69.7 at 64 x 64 (not the rule's
    pick where it is faster: one row of each); 12 causal heads of 64 at T = 1024 20.5 us at
    64 x 64, 19.3 at 64 x 128; 8 sequences of 256 10.1 against 11.1."""
    if head_width == 64:
        return 64, 64
    bn = 128 if tokens % 128 == 0 else 64
    bm = 128 if rows % 128 == 0 and rows // 128 * heads * 2 >= H100_SMS else 64
    return bm, bn


def fused_projection_config(base: GemmConfig, tokens: int | None) -> GemmConfig:
    """The fused program's QKV or output GEMM in place of the chain's `base`: from K = LONG_K
    the TMA tile (with its TMA-store epilogue) the wave model predicts fastest
    (`propose_tma_configs`) whose rows divide a sequence's `tokens`. The fused program's
    dependencies take any tile width (ranges where a head straddles tiles), where the chain's
    count its 64-wide k-steps in PROJECTION_WIDTHS; and since every query block reads every
    key block, no consumer fills a projection's last partial wave, which the width must: 12
    heads of 128 at T = 1024 take 256 tiles of 128 x 144 (two waves of 132) where
    `projection_width`'s 128 took 288 (three). `tokens` None: rows of any count (after a KV
    cache, where the dependencies take the ranges a sequence's few rows straddle)."""
    if base.K < LONG_K:
        return base
    every = len(TILE_ROWS) * len(TILE_COLUMNS)
    for proposal in propose_tma_configs(base.M, base.N, base.K, base.dtype, base.epilogue,
                                        limit=every, cluster_limit=0):
        if proposal.tma_store and (tokens is None or tokens % proposal.tile[0] == 0):
            return replace(proposal, name=base.name, sync_hooks=True, persistent=False)
    return base


def fused_attention_configs(match: AttentionMatch) -> FusedAttentionSpec:
    """The chain's GEMMs' shapes (attention_configs') in the tiles the fused program's waves
    want (`fused_projection_config`) around the fused kernel (wgmma, sm_90a as they are)."""
    t, d, h, b = match.tokens, match.head_width, match.heads, match.sequences
    if d not in (64, 128):
        raise diagnostic(PASS, match.anchor, f"the fused attention kernel takes heads of 64 or "
                                             f"128 columns, got {d}")
    if match.cached:
        return cached_attention_configs(match)
    chain = attention_configs(match)
    bm, bn = fused_attention_tile(b * t, h, d, t)
    try:
        fused = attention_config(t, d, h, b, match.causal, match.scale, block_m=bm, block_n=bn,
                                 dtype=match.dtype, mma="wgmma", name=ATTENTION,
                                 sync_hooks=True)
    except ValueError as err:
        raise diagnostic(PASS, match.anchor, f"the fused attention kernel refuses this shape: "
                                             f"{err}") from err
    try:
        qkv, out = (fused_projection_config(cfg, t) for cfg in (chain.qkv, chain.out))
    except ValueError as err:
        raise diagnostic(PASS, match.anchor, f"the generated kernels refuse this shape: "
                                             f"{err}") from err
    return FusedAttentionSpec(qkv, fused, out, h, b)


def cached_attention_configs(match: AttentionMatch) -> FusedAttentionSpec:
    """After a KV cache (decoding): the fused kernel reads each sequence's S' cached keys and
    values, then its T new tokens' from QKV; a sequence's new tokens are one query block (T up
    to 128 rows: 64 where they fit) or whole blocks of `fused_attention_tile`'s; keys 128 at
    a time where S' and the head width allow. The projections (M = B·T rows, a few when
    decoding) in the tiles the wave model proposes, rows of any count: a tile may hold several
    sequences' rows, which the dependencies take as ranges."""
    t, d, h, b, c, e = (match.tokens, match.head_width, match.heads, match.sequences,
                        match.width, match.model_width)
    for what, columns in (("the model width", e), ("the head width", d)):
        if columns % 64:
            raise diagnostic(PASS, match.anchor, f"{what} {columns} is not a multiple of 64 "
                                                 "(the GEMMs' k-tile)")
    bm = 64 if t <= 64 else 128 if t <= 128 else fused_attention_tile(b * t, h, d, t)[0]
    if t > 128 and t % bm:
        raise diagnostic(PASS, match.anchor, f"{t} new tokens after a KV cache: at most 128 "
                                             f"(one query block) or a multiple of {bm}")
    bn = 128 if d == 128 and match.cached % 128 == 0 else 64
    try:
        fused = attention_config(t, d, h, b, False, match.scale, block_m=bm, block_n=bn,
                                 dtype=match.dtype, mma="wgmma", name=ATTENTION,
                                 sync_hooks=True, cached=match.cached)
        if t <= bm and (splits := decode_splits(fused.key_blocks, b * h)) > 1:
            fused = replace(fused, splits=splits)

        def projection(name: str, n: int, k: int, bias: int | None) -> GemmConfig:
            epilogue = "bias" if bias is not None else None
            if b * t <= STREAMING_ROWS:  # its weights' bytes: on most SMs
                return streaming_config(b * t, n, k, match.dtype, epilogue, name,
                                        sync_hooks=True)
            base = _projection_config(name, match, b * t, n, k, 64, (4, 1), epilogue)
            return fused_projection_config(base, None)

        qkv, out = projection(QKV, 3 * c, e, match.b_qkv), projection(OUT, e, c, match.b_out)
    except ValueError as err:
        raise diagnostic(PASS, match.anchor, f"the generated kernels refuse this shape after a "
                                             f"KV cache: {err}") from err
    return FusedAttentionSpec(qkv, fused, out, h, b)


def decode_splits(key_blocks: int, blocks: int, sms: int = H100_SMS) -> int:
    """How many blocks a (sequence, head)'s `key_blocks` key blocks are split over, where
    `blocks` (sequence, head) pairs would leave SMs idle: as many as fill the SMs once, each
    split at least one key block and the last not empty (ceil(key blocks / per split))."""
    wanted = max(1, min(key_blocks, -(-sms // blocks)))
    per = -(-key_blocks // wanted)
    return -(-key_blocks // per)


def _row_tiles(firsts: Iterable[int], rows: int, tile: int, grid: int) -> tuple[int, bool]:
    """(the most tiles of `tile` rows that `rows` rows from any of `firsts` cover, whether a
    range of that many from one's first tile reaches past `grid` tiles)."""
    firsts = list(firsts)
    span = max((first + rows - 1) // tile - first // tile + 1 for first in firsts)
    return span, any(first // tile + span > grid for first in firsts)


def cached_attention_dependencies(spec: FusedAttentionSpec) -> list[sync.DependencyOp]:
    """fused_attention_dependencies after a KV cache: a tile (query block, head) reads q at
    its rows of QKV (a sequence's T rows where they are one block: the tile's first row is
    d0 · min(T, BM)), and per new key block s0 (counted from the first after the cache) k and
    v at its sequence's rows from s0 · BN, each as the QKV tile rows those rows straddle (a
    tile row may hold several sequences' rows); the caches are inputs. A tile row of the
    output GEMM reads O's rows of its attention tiles, which a few rows a sequence may make
    several."""
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    s0, s1, s2 = AffineExpr.symbol(0), AffineExpr.symbol(1), AffineExpr.symbol(2)
    att = spec.attention
    bm1, bn1, _ = spec.qkv.tile
    qkv_rows, col_grid = spec.qkv.grid[:2]
    bma, bna = att.block_m, att.block_n
    t, d, c, h = spec.tokens, spec.head_width, spec.width, spec.heads
    blocks = att.grid[0]
    rq = min(t, bma)  # a tile's query rows: its first is d0 · rq (split: (d0 / P) · T)
    steps = -(-t // bna)
    splits = att.splits

    def columns(offset: int, symbol: AffineExpr) -> tuple[AffineExpr, int, bool]:
        span = _tiles_spanned(lambda i: offset + i * d, d, bn1, h)
        past = (offset + (h - 1) * d) // bn1 + span > col_grid
        return _ratio(d1 * d + offset, bn1) + symbol, span, past

    q_first = _ratio(d0, splits) * t if splits > 1 else d0 * rq
    q_rows, q_past = _row_tiles((i // splits * t if splits > 1 else i * rq
                                 for i in range(blocks)), rq, bm1, qkv_rows)
    q_col, q_cols, q_col_past = columns(0, s0)
    deps = [sync.DependencyOp(QKV, ATTENTION, 0, AffineMap(2, 2, (_ratio(q_first, bm1) + s1,
                                                                  q_col)),
                              [(0, q_cols), (0, q_rows)], clipped=q_past or q_col_past)]
    per_sequence = att.query_blocks * splits
    first = (_ratio(d0, per_sequence) * t) if per_sequence > 1 else d0 * t
    key_firsts = [(i // per_sequence) * t + step * bna for i in range(blocks)
                  for step in range(steps)]
    k_rows, k_past = _row_tiles(key_firsts, min(bna, t), bm1, qkv_rows)
    for operand, offset in ((1, c), (2, 2 * c)):
        k_col, k_cols, k_col_past = columns(offset, s1)
        deps.append(sync.DependencyOp(
            QKV, ATTENTION, operand,
            AffineMap(2, 3, (_ratio(first + s0 * bna, bm1) + s2, k_col)),
            [(0, steps), (0, k_cols), (0, k_rows)], clipped=k_past or k_col_past))
    producer, o_grid = ATTENTION, blocks
    if splits > 1:  # the merge of (sequence, head) reads its splits' partial O and Stats
        producer, o_grid = COMBINE, att.combine.grid[0]
        deps += [sync.DependencyOp(ATTENTION, COMBINE, operand, AffineMap(2, 1, (
            d0 * splits + s0, d1)), [(0, splits)]) for operand in (0, 1)]
    bm4, _, bk4 = spec.out.tile
    out_rows = spec.out.tile_grid[0]
    o_blocks, o_past = _row_tiles((i * bm4 for i in range(out_rows)), bm4, rq, o_grid)
    # a k-step wider than a head (a streaming GEMM's 128 over heads of 64) reads several
    heads = _tiles_spanned(lambda i: i * bk4, bk4, d, spec.out.k_tiles)
    head = _ratio(s0 * bk4, d) + (s2 if heads > 1 else 0)
    deps.append(sync.DependencyOp(producer, OUT, 0, AffineMap(2, 2 + (heads > 1), (
        _ratio(d0 * bm4, rq) + s1, head)),
        [(0, spec.out.k_tiles), (0, o_blocks), *([(0, heads)] if heads > 1 else [])],
        clipped=o_past))
    return deps


def _tiles_spanned(first: Callable[[int], int], width: int, tile: int, count: int) -> int:
    """The most tiles of `tile` columns that `width` columns from `first(i)` cover, over i."""
    return max((first(i) + width - 1) // tile - first(i) // tile + 1 for i in range(count))


def fused_attention_dependencies(spec: FusedAttentionSpec) -> list[sync.DependencyOp]:
    """Attention tile (d0, d1) = (query block, head) reads q at QKV's rows of its block and
    the head's columns (operand 0, no step), and per key block s0 k (1) and v (2) at the
    sequence's rows of the block and the head's columns C + h·D, 2C + h·D; a tile of the
    output GEMM reads O's rows of its tile row, the head of its k-step's columns (operand
    0). Ranges cover the producer tiles a block's rows or a head's columns straddle."""
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    s0, s1, s2 = AffineExpr.symbol(0), AffineExpr.symbol(1), AffineExpr.symbol(2)
    att = spec.attention
    bm1, bn1, _ = spec.qkv.tile
    bma, bna = att.block_m, att.block_n
    t, d, c, h = spec.tokens, spec.head_width, spec.width, spec.heads
    col_grid = spec.qkv.grid[1]

    def columns(offset: int, symbol: AffineExpr) -> tuple[AffineExpr, int, bool]:
        """QKV column tiles of the head's d columns from `offset`, and whether their range
        reaches past the grid (the last head's, where it needs fewer than the span)."""
        span = _tiles_spanned(lambda i: offset + i * d, d, bn1, h)
        past = (offset + (h - 1) * d) // bn1 + span > col_grid
        return _ratio(d1 * d + offset, bn1) + symbol, span, past

    def rows(first_row: AffineExpr, rows_read: int, symbol: AffineExpr) -> tuple[AffineExpr,
                                                                               int]:
        """QKV tile rows of `rows_read` rows from `first_row` (a multiple of them)."""
        return _ratio(first_row, bm1) + symbol, max(1, rows_read // bm1)

    # the sequence's first row of QKV: its tiles are one sequence's (T divides by bm1)
    first = (_ratio(d0 * bma, t) * t) if spec.sequences > 1 else AffineExpr.constant(0)
    q_row, q_rows = rows(d0 * bma, bma, s1)
    q_col, q_cols, q_past = columns(0, s0)
    deps = [sync.DependencyOp(QKV, ATTENTION, 0, AffineMap(2, 2, (q_row, q_col)),
                              [(0, q_cols), (0, q_rows)], clipped=q_past)]
    for operand, offset in ((1, c), (2, 2 * c)):
        k_row, k_rows = rows(first + s0 * bna, bna, s2)
        k_col, k_cols, k_past = columns(offset, s1)
        deps.append(sync.DependencyOp(QKV, ATTENTION, operand, AffineMap(2, 3, (k_row, k_col)),
                                      [(0, t // bna), (0, k_cols), (0, k_rows)],
                                      clipped=k_past))
    bm4, _, bk4 = spec.out.tile
    # an output tile row past the last query block (T no multiple of its rows) reads fewer
    blocks = max(1, bm4 // bma)
    o_past = (spec.out.tile_grid[0] - 1) * bm4 // bma + blocks > spec.attention.grid[0]
    deps.append(sync.DependencyOp(ATTENTION, OUT, 0, AffineMap(2, 2, (
        _ratio(d0 * bm4, bma) + s1, _ratio(s0 * bk4, d))),
        [(0, spec.out.k_tiles), (0, blocks)], clipped=o_past))
    return deps


def heaviest_first(cfg: AttentionConfig) -> sync.OrderAttr | None:
    """A causal attention's tiles (query block, head) in a table order, the last query block
    of every head first, where its blocks take more than one wave (occupancy from the
    kernel's threads and shared memory; else None): a query block reads the keys up to its
    own, so the last blocks take longest, and blocks handed out light first leave the
    heaviest to the second wave. On an H200 (`attention-heaviest-first-ab-nvidia-h200.json`):
    GPT-3's 12 heads at T = 2048, 192 blocks of 128 queries one an SM, the kernel 0.116-0.124
    -> 0.096-0.097 ms and the program with PDL 0.490 -> 0.468; where every block is resident
    at once (GPT-2's heads: 64-query blocks, several an SM) the order's counter only cost,
    0.0414-0.0417 -> 0.0447-0.0448 ms at T = 1024."""
    blocks, heads = cfg.grid[:2]
    resident = blocks_per_sm(cfg.block[0], shared_bytes=cfg.dynamic_shared_bytes).blocks_per_sm
    if not cfg.causal or StageWaves(blocks * heads, resident, H100_SMS).wave_count <= 1:
        return None
    return sync.OrderAttr("table", [(blocks - 1 - slot // heads) * heads + slot % heads
                                    for slot in range(blocks * heads)])


def _wait_at_probes(ops: list[Operation]) -> None:
    """Attention's stages wait for a producer's tiles at once, at their probes (the module
    docstring says why)."""
    for op in ops:
        if isinstance(op, sync.StageOp):
            op.attributes[WAIT_AT_PROBE_ATTR] = UnitAttr()


def fused_attention_stage_module(spec: FusedAttentionSpec) -> ModuleOp:
    """The QKV GEMM, the attention kernel and the output GEMM, their stages, dependencies and
    launches (each on its own stream, producers at higher priority)."""
    att = spec.attention
    split = att.splits > 1  # and a stage that merges the splits
    merge = replace(att.combine, name=COMBINE)
    kernels = [gemm_module(0, 0, 0, config=spec.qkv), attention_module(att),
               *([attention_combine_module(merge)] if split else []),
               gemm_module(0, 0, 0, config=spec.out)]
    ops: list[Operation] = [op.clone() for module in kernels for op in module.ops]
    ops.append(sync.StageOp(QKV, [f"{QKV}_module", QKV], spec.qkv.grid[:2], spec.qkv.block,
                            output_tile(spec.qkv)))
    ops.append(sync.StageOp(ATTENTION, [f"{ATTENTION}_module", ATTENTION], att.grid[:2],
                            att.block, att.tile, order=heaviest_first(att)))
    if split:
        ops.append(sync.StageOp(COMBINE, [f"{COMBINE}_module", COMBINE], merge.grid[:2],
                                merge.block, merge.tile))
    ops.append(sync.StageOp(OUT, [f"{OUT}_module", OUT], spec.out.grid[:2], spec.out.block,
                            output_tile(spec.out)))
    ops += cached_attention_dependencies(spec) if att.cached else \
        fused_attention_dependencies(spec)
    _wait_at_probes(ops)
    names = (QKV, ATTENTION, *((COMBINE,) if split else ()), OUT)
    ops += [sync.LaunchOp(name, stream=i, priority=i - len(names) + 1)
            for i, name in enumerate(names)]
    return ModuleOp(ops)


def fused_attention_bindings(match: AttentionMatch, splits: int = 1
                             ) -> dict[str, list[graph.BindAttr]]:
    """Kernel arguments: temps 0 QKV ([B·]T x 3C; the attention kernel's q, k and v), 1 O
    ([B·]T x C); after a KV cache the attention kernel's next two the caches (inputs); its
    keys split (`splits`), temps 2 and 3 the splits' partial O and Stats, which the combine
    stage merges into O."""
    chain = attention_bindings(match)
    qkv, o = graph.BindAttr("temp", 0), graph.BindAttr("temp", 1)
    caches = [graph.BindAttr("input", index) for index in (match.k_cache, match.v_cache)
              if index is not None]
    binds = {QKV: chain[QKV], ATTENTION: [qkv, qkv, qkv, o, *caches],
             OUT: [o, *chain[OUT][1:]]}
    if splits > 1:  # temps 2 and 3: the splits' partial O and their Stats
        parts, stats = graph.BindAttr("temp", 2), graph.BindAttr("temp", 3)
        binds.update({ATTENTION: [qkv, qkv, qkv, parts, *caches, stats],
                      COMBINE: [parts, stats, o]})
    return binds


def fused_attention_temps(match: AttentionMatch, element,
                          fused: AttentionConfig | None = None) -> list[TensorType]:
    """QKV and O; split (`fused.splits` > 1) also the splits' partial O and Stats."""
    qkv, _, _, o = attention_temps(match, element)
    if fused is None or fused.splits == 1:
        return [qkv, o]
    parts = TensorType(f32, [fused.parts_rows, fused.width])
    return [qkv, o, parts, parts]


def attention_temps(match: AttentionMatch, element) -> list[TensorType]:
    t, c, h, b = match.tokens, match.width, match.heads, match.sequences
    scores = [t, t] if h == b == 1 else [b * h, t, t]
    return [TensorType(element, shape) for shape in ([b * t, 3 * c], scores, scores,
                                                     [b * t, c])]


# ---------------------------------------------------------------------------------------------
# Conv chain: conv2d (3x3) [+ bias] [-> relu] -> conv2d (3x3) [+ bias], channels last
# ---------------------------------------------------------------------------------------------

CONV1, CONV2 = "conv1", "conv2"
CONV_LAYOUT = "NHWC"  # the implicit-GEMM kernel's (kernels/conv2d.py): KRSC filters
_CONV_TILES = ((128, (64,), (8, 1), 4), (64, (256, 128, 64), (4, 1), 4))
"""BM, the BN it may take (widest first: conv_width), warps and stages of the wgmma convs,
BK 64; two warpgroups over 128 rows first, one over 64 where 128 rows straddle images. On an
H200 (56x56, batch 1-32) 64-row tiles ran as fast or faster with 4 stages than with 6 (64 x 64:
6.9-32.3 us against 7.0-34.0), 5 or 6 stages of the wider ones fell off a cliff (69 us where 4
took 25); 128-row tiles wider than 64 were not measured on the shapes they take."""
CONV_BK = 64


def conv_width(bm: int, widths: tuple[int, ...], pixels: int, channels: int) -> int:
    """The widest BN of `widths` that divides the conv's output channels and leaves a grid of
    half a wave or more (H100_SMS / 2 tiles), else the narrowest: a wider tile gathers its
    im2col rows once for more filters (an H200, batch 8, 56x56, C = K: 256 channels 67 us at
    64 x 256 against 92 at 64 x 64, 128 channels 25 against 29), a grid of few tiles leaves
    SMs idle (batch 1, 256 channels: 17 us at 64 x 128, 23 at 64 x 256 with 49 tiles)."""
    rows = -(-pixels // bm)
    for width in widths:
        if channels % width == 0 and rows * (channels // width) >= H100_SMS // 2:
            return width
    return widths[-1]


@dataclass(frozen=True)
class ConvChainMatch:
    """A matched conv chain: function argument indices (None: absent) and sizes."""

    x: int
    w1: int
    b1: int | None
    w2: int
    b2: int | None
    relu: bool
    images: int  # N
    height: int
    width: int
    channels: tuple[int, int, int]  # C (x), K1 (the middle activation), K2 (the result)
    anchor: Operation  # the second conv: where diagnostics about the chain point

    @property
    def epilogue1(self) -> str | None:
        if self.b1 is not None:
            return "bias_relu" if self.relu else "bias"
        return "relu" if self.relu else None


def _conv(value: SSAValue, op: Operation, what: str) -> graph.Conv2dOp:
    conv = _producer(value, graph.Conv2dOp, op, what)
    assert isinstance(conv, graph.Conv2dOp)
    if conv.layout_name != CONV_LAYOUT:
        raise diagnostic(PASS, conv, f"graph.conv2d in {conv.layout_name}: the implicit-GEMM "
                                     "kernel reads channels-last activations and K x R x S x C "
                                     "filters; give the piece NHWC tensors (layout \"NHWC\"), "
                                     "transposed at its boundary")
    shape = TensorType.get_shape(conv.weight.type)  # type: ignore[arg-type]
    stride, padding = conv.stride.get_values(), conv.padding.get_values()
    if (shape[1], shape[2], *stride, *padding) != (3, 3, 1, 1, 1, 1):
        raise diagnostic(PASS, conv, f"the conv kernel computes 3x3 filters at stride 1, "
                                     f"padding 1, not {shape[1]}x{shape[2]} at stride "
                                     f"{list(stride)}, padding {list(padding)}")
    return conv


def match_conv_chain(fn: func.FuncOp) -> ConvChainMatch:
    """y = conv2d(relu?(conv2d(x, w1[, b1])), w2[, b2]), both 3x3 / stride 1 / padding 1 in
    NHWC; a diagnostic where the function does not fit."""
    ret = fn.body.block.last_op
    if not isinstance(ret, func.ReturnOp) or len(ret.arguments) != 1:
        raise diagnostic(PASS, ret or fn, "a piece returns exactly one tensor")
    second = _conv(ret.arguments[0], ret, "the result")
    covered: set[Operation] = {second, ret}
    middle = second.input
    owner = middle.owner if isinstance(middle, OpResult) else None
    relu = isinstance(owner, graph.ReluOp)
    if isinstance(owner, graph.ReluOp):
        covered.add(_producer(middle, graph.ReluOp, second, "the middle activation"))
        middle = owner.input
    elif isinstance(owner, graph.GeluOp | graph.SiluOp | graph.SoftmaxOp):
        raise diagnostic(PASS, owner, f"between the convs the kernel's epilogue computes "
                                      f"bias and ReLU, not {owner.name}")
    first = _conv(middle, second, "the middle activation")
    covered.add(first)
    extra = [op for op in fn.body.block.ops if op not in covered]
    if extra:
        raise diagnostic(PASS, extra[0], f"{extra[0].name} is not part of the conv chain; a "
                                         "piece holds one pattern and nothing else")
    x_type = first.input.type
    assert isinstance(x_type, TensorType)
    if _dtype(x_type, first) != "f16":
        raise diagnostic(PASS, first, "the conv kernel takes f16, not bf16")
    n, h, w, c = x_type.get_shape()
    k1 = TensorType.get_shape(first.result.type)[-1]  # type: ignore[arg-type]
    k2 = TensorType.get_shape(second.result.type)[-1]  # type: ignore[arg-type]
    return ConvChainMatch(
        x=_arg(first.input, fn, first, "the input"),
        w1=_arg(first.weight, fn, first, "the first filter"),
        b1=None if first.bias is None else _arg(first.bias, fn, first, "the first bias"),
        w2=_arg(second.weight, fn, second, "the second filter"),
        b2=None if second.bias is None else _arg(second.bias, fn, second, "the second bias"),
        relu=relu, images=n, height=h, width=w, channels=(c, k1, k2), anchor=second)


@dataclass(frozen=True)
class ConvChainSpec:
    """The two implicit-GEMM convs (same BM: tile row d0 is the same output pixels in both)
    and the halo: conv2's tile row d0 reads conv1's tile rows d0 - halo .. d0 + halo."""

    conv1: ConvConfig
    conv2: ConvConfig
    halo: int | None  # None: tiles straddle images (the persistent form: no dependency)

    @property
    def gemms(self) -> tuple[GemmConfig, ...]:
        """The chain's GEMM views, in order (the cost model's stages)."""
        return (self.conv1.gemm, self.conv2.gemm)


def conv_halo(bm: int, height: int, width: int) -> int | None:
    """Tile rows a BM-pixel output tile reaches above and below its own in the conv before it
    (None: a tile straddles two images, whose reads sync-verify bounds only by whole images).

    Output pixels m0 .. m0 + BM - 1 read input pixel rows one above and one below; where they
    start mid-row the bound taken (the row's first pixel, the next row's last) reaches up to
    2W - 1 pixels past the tile, W where tiles hold whole rows, and nothing where tiles hold
    whole images (the padding rows are zero, not read)."""
    pixels = height * width
    if bm % pixels == 0:
        return 0
    if pixels % bm:
        return None
    reach = width if bm % width == 0 else 2 * width - 1
    return -(-reach // bm)


CONV_PIPELINES = ("cp_async", "tma_ws")
"""graph-to-stages' conv-pipeline: the chain's convs as cp.async wgmma kernels (every thread
gathers its im2col chunks), or as the warp-specialized TMA GEMM whose producer copies A with
im2col TMA loads (_TMA_CONV_TILES; C a multiple of 64)."""

_TMA_CONV_TILES = ((64, (128, 64), (4, 1), None),)
"""_CONV_TILES of the chain's TMA convs (stages None: as many as fit beside the TMA-store
epilogue's staging buffer): one consumer warpgroup, whose 64-row tiles hold whole image rows
at 56x56 where 128 rows straddle images. Standalone on an H200 (conv-tma-*), 64 x 128 ran at
1.12, 1.22, 0.95 of cuDNN on 56x56 layers of batch 1 C = 256, batch 8 C = 128 and 256."""


TMA_CONV_BLOCKS_PER_SM = 2
"""Blocks an SM holds of the chain's tile-synchronized TMA convs (one tile a block,
GemmConfig.blocks_per_sm) where their grid has more tiles than SMs: a conv tile has 9 to 36
k-steps, so one block's ring fill and epilogue left the SM idle for much of its tile. On an
H200 (bench conv, 56x56) two blocks of half the ring took the chains at batch 8 and 32 from
0.0262-0.4850 ms to 0.0201-0.4779 (tma:row+pdl; 1.41x at batch 32, C = 64); with fewer tiles
than SMs (batch 1, C = 256: 98) the halved ring only lost (0.0231 -> 0.0262 ms)."""


_TMA_PERSISTENT_CONV_TILES = ((128, (128, 64), (8, 1), None), (64, (128, 64), (4, 1), None))
"""_TMA_CONV_TILES of the chain's persistent TMA convs, which have no dependency, so tiles may
straddle images: two consumer warpgroups over 128 rows where that leaves two waves of tiles or
more (PERSISTENT_CONV_MIN_TILES), else one over 64. Standalone on an H200 (conv-tma-*, 56x56)
that takes the best measured tile of 6 of the chain's 7 layers (128 x 128 at batch 8 C = 256:
1.06 of cuDNN where 64 x 128 ran at 0.95; 64 x 128 at batch 8 C = 128: 1.22 against 1.08)."""
PERSISTENT_CONV_MIN_TILES = 2 * H100_SMS


def _persistent_conv_tiles(pixels: int, channels: int) -> tuple:
    """The first of _TMA_PERSISTENT_CONV_TILES whose tiles (at conv_width) number
    PERSISTENT_CONV_MIN_TILES or more, else the last."""
    for config in _TMA_PERSISTENT_CONV_TILES[:-1]:
        bm, widths = config[0], config[1]
        tiles = -(-pixels // bm) * (channels // conv_width(bm, widths, pixels, channels))
        if tiles >= PERSISTENT_CONV_MIN_TILES:
            return config
    return _TMA_PERSISTENT_CONV_TILES[-1]


def conv_chain_configs(match: ConvChainMatch, pipeline: str = "cp_async",
                       persistent: bool = False) -> ConvChainSpec:
    """wgmma convs (BK 64) of one BM where no tile straddles images; a diagnostic where the
    kernels cannot take the shapes. `pipeline`: one of CONV_PIPELINES; `persistent` (tma_ws
    only): the tiles of the chain's persistent form (_TMA_PERSISTENT_CONV_TILES; halo None
    where they straddle images: that form has no dependency)."""
    c, k1, k2 = match.channels
    n, h, w = match.images, match.height, match.width
    if k1 % CONV_BK:
        raise diagnostic(PASS, match.anchor, f"the middle activation has {k1} channels, not a "
                                             f"multiple of {CONV_BK} (the second conv's k-tile "
                                             "and the dependency's step)")
    tma = pipeline == "tma_ws"
    if tma and c % CONV_BK:
        raise diagnostic(PASS, match.anchor, f"conv-pipeline=tma_ws copies 64-channel k-tiles "
                                             f"of one filter tap: the input has {c} channels, "
                                             f"not a multiple of {CONV_BK}")
    if persistent and not tma:
        raise ValueError("persistent convs are the warp-specialized TMA ones (tma_ws)")
    if persistent:
        bm, widths, warps, stages = _persistent_conv_tiles(n * h * w, k1)
        halo = conv_halo(bm, h, w)
    else:
        tiles = _TMA_CONV_TILES if tma else _CONV_TILES
        usable = [(config, conv_halo(config[0], h, w)) for config in tiles
                  if conv_halo(config[0], h, w) is not None]
        if not usable:
            rows = " or ".join(str(config[0]) for config in sorted(tiles))
            raise diagnostic(PASS, match.anchor, f"{h}x{w} images: output tiles of {rows} "
                                                 "pixels straddle images (the halo then "
                                                 "reaches whole images)")
        (bm, widths, warps, stages), halo = usable[0]

    def conv(name, cin, cout, epilogue):
        bn = conv_width(bm, widths, n * h * w, cout)
        tiles = -(-n * h * w // bm) * (cout // bn)
        blocks = TMA_CONV_BLOCKS_PER_SM if not persistent and tiles > H100_SMS else 1
        kernel = dict(pipeline="tma_ws", tma_store=True, blocks_per_sm=blocks,
                      stages=stages_for(bm, bn, bn, blocks)) if tma else dict(stages=stages)
        return conv2d_config(n, h, w, cin, cout, tile=(bm, bn, CONV_BK), warps=warps,
                             epilogue=epilogue, name=name, mma="wgmma", sync_hooks=True,
                             **kernel)

    try:
        return ConvChainSpec(conv(CONV1, c, k1, match.epilogue1),
                             conv(CONV2, k1, k2, "bias" if match.b2 is not None else None),
                             halo)
    except ValueError as err:
        raise diagnostic(PASS, match.anchor, f"the conv kernels refuse this shape: {err}") \
            from err


def conv_chain_pipelines(fn: func.FuncOp) -> tuple[str, ...]:
    """The CONV_PIPELINES whose kernels take the conv chain `fn` (conv_chain_configs refuses
    the others)."""
    match = match_conv_chain(fn)
    taken = []
    for pipeline in CONV_PIPELINES:
        try:
            conv_chain_configs(match, pipeline)
        except OpDiagnostic:
            continue
        taken.append(pipeline)
    return tuple(taken)


def conv_chain_dependency(spec: ConvChainSpec) -> sync.DependencyOp:
    """conv2's tile (d0, d1) at k-step s0 reads filter tap (r, s) = divmod(s0 BK / C, 3) over
    channels (s0 BK) mod C: conv1's column tile of those channels, in the tile rows of the halo
    (s1; rows past the grid are the zero padding: clipped)."""
    d0, s0, s1 = AffineExpr.dimension(0), AffineExpr.symbol(0), AffineExpr.symbol(1)
    k_tiles = spec.conv2.gemm.k_tiles
    per_tap = spec.conv2.C // CONV_BK  # k-steps per filter tap
    per_column = spec.conv1.tile[1] // CONV_BK  # k-steps per conv1 column tile
    if spec.conv1.grid[1] == 1:
        column: AffineExpr = AffineExpr.constant(0)
    else:
        column = _ratio(s0 if per_tap == 1 else s0 % per_tap, per_column)
    row = d0 + s1 - spec.halo if spec.halo else d0
    ranges = [(0, k_tiles)] + ([(0, 2 * spec.halo + 1)] if spec.halo else [])
    tiles = AffineMap(2, len(ranges), (row, column))
    return sync.DependencyOp(CONV1, CONV2, 0, tiles, ranges, clipped=spec.halo > 0)


def conv_chain_stage_module(spec: ConvChainSpec) -> ModuleOp:
    """The two convs, their stages, the halo dependency and the launches (conv1 first, on a
    higher-priority stream)."""
    if spec.halo is None:  # the persistent form's tiles: no halo bounds their reads
        raise ValueError("tiles that straddle images have no halo dependency: their chain "
                         "runs persistent in stream order (conv_chain_persistent_module)")
    ops: list[Operation] = [op.clone() for cfg in (spec.conv1, spec.conv2)
                            for op in conv2d_module(cfg).ops]
    for cfg in (spec.conv1, spec.conv2):
        ops.append(sync.StageOp(cfg.name, [f"{cfg.name}_module", cfg.name], cfg.grid[:2],
                                cfg.block, output_tile(cfg.gemm)))
    ops.append(conv_chain_dependency(spec))
    ops += [sync.LaunchOp(CONV1, stream=0, priority=-1), sync.LaunchOp(CONV2, stream=1)]
    return ModuleOp(ops)


def conv_chain_persistent_module(spec: ConvChainSpec) -> ModuleOp:
    """The chain's TMA convs without sync hooks, so persistent grids (at most a block an SM
    walking its tiles; the kernels `conv_sweep` times alone), conv1 then conv2 on stream 0 with
    no dependency: stream order is their only synchronization (mlp_persistent_module's form).
    """
    if spec.conv1.pipeline != "tma_ws":
        raise ValueError("persistent convs are the warp-specialized TMA ones (tma_ws)")
    convs = [replace(cfg, sync_hooks=False) for cfg in (spec.conv1, spec.conv2)]
    ops: list[Operation] = [op.clone() for cfg in convs for op in conv2d_module(cfg).ops]
    ops += [sync.StageOp(cfg.name, [f"{cfg.name}_module", cfg.name], cfg.gemm.grid[:2],
                         cfg.block, output_tile(cfg.gemm)) for cfg in convs]
    ops += [sync.LaunchOp(CONV1, stream=0), sync.LaunchOp(CONV2, stream=0)]
    return ModuleOp(ops)


def conv_chain_bindings(match: ConvChainMatch) -> dict[str, list[graph.BindAttr]]:
    """Kernel arguments x, w, y[, bias]: temp 0 is conv1's output (N x H x W x K1); the
    filters K x 3 x 3 x C are the kernels' K x 9C as they are (`over`: a TMA conv's filter
    map is encoded over that matrix)."""
    def bias(index: int | None) -> list[graph.BindAttr]:
        return [] if index is None else [graph.BindAttr("input", index)]

    c, k1, k2 = match.channels
    return {CONV1: [graph.BindAttr("input", match.x),
                    graph.BindAttr("input", match.w1, over=(k1, 9 * c)),
                    graph.BindAttr("temp", 0), *bias(match.b1)],
            CONV2: [graph.BindAttr("temp", 0), graph.BindAttr("input", match.w2,
                                                              over=(k2, 9 * k1)),
                    graph.BindAttr("result", 0), *bias(match.b2)]}


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------


def _is_attention(fn: func.FuncOp) -> bool:
    """Whether `fn` ends like attention (its output linear reads a matmul): the pattern whose
    diagnostics it gets."""
    ret = fn.body.block.last_op
    if not isinstance(ret, func.ReturnOp) or len(ret.arguments) != 1:
        return False
    out = ret.arguments[0].owner
    if not isinstance(out, graph.LinearOp):
        return False
    merged = out.input.owner
    if isinstance(merged, graph.ReshapeOp) and isinstance(merged.input.owner, graph.TransposeOp):
        merged = merged.input.owner.input.owner  # the heads merged back: o.transpose(0, 1)
    return isinstance(merged, graph.MatmulOp)


def _is_conv_chain(fn: func.FuncOp) -> bool:
    """Whether `fn` returns a graph.conv2d's result: the conv chain's diagnostics."""
    ret = fn.body.block.last_op
    return isinstance(ret, func.ReturnOp) and len(ret.arguments) == 1 and \
        isinstance(ret.arguments[0].owner, graph.Conv2dOp)


def plan_configs(fn: func.FuncOp
                 ) -> MlpSpec | AttentionSpec | FusedAttentionSpec | ConvChainSpec:
    """The kernel configs of the pattern `fn` matches (no kernels generated), or the
    diagnostic of the pass."""
    if _is_conv_chain(fn):
        return conv_chain_configs(match_conv_chain(fn))
    if _is_attention(fn):  # after a KV cache the fused program's alone
        found = match_attention(fn)
        return fused_attention_configs(found) if found.cached else attention_configs(found)
    return mlp_configs(match_mlp(fn))


def _stage_program(fn: func.FuncOp, persistent: bool = False, conv_pipeline: str = "cp_async",
                   attention: str = "chain") -> tuple[ModuleOp, list[TensorType]]:
    """The stage program of `fn`, its kernels' arguments bound, and its temporaries;
    `persistent`: an MLP's GEMMs as persistent grids in stream order; `conv_pipeline`: a conv
    chain's kernels (CONV_PIPELINES)."""
    element = fn.function_type.inputs.data[0].element_type  # type: ignore[attr-defined]
    if persistent and _is_attention(fn):
        raise diagnostic(PASS, fn, "persistent=true takes an MLP or a conv chain of TMA convs: "
                                   "attention's kernels run a block a tile")
    if persistent and _is_conv_chain(fn) and conv_pipeline != "tma_ws":
        raise diagnostic(PASS, fn, "persistent=true takes a conv chain's TMA convs "
                                   "(conv-pipeline=tma_ws): the cp.async convs run a block a "
                                   "tile")
    if _is_conv_chain(fn):
        chain = match_conv_chain(fn)
        spec = conv_chain_configs(chain, conv_pipeline, persistent)
        module = conv_chain_persistent_module(spec) if persistent else \
            conv_chain_stage_module(spec)
        binds = conv_chain_bindings(chain)
        temps = [TensorType(element, [chain.images, chain.height, chain.width,
                                      chain.channels[1]])]
    elif _is_attention(fn) and attention == "fused":
        found = match_attention(fn)
        fused = fused_attention_configs(found)
        module = fused_attention_stage_module(fused)
        binds = fused_attention_bindings(found, fused.attention.splits)
        temps = fused_attention_temps(found, element, fused.attention)
    elif _is_attention(fn):
        found = match_attention(fn)
        module = attention_stage_module(attention_configs(found))
        binds = attention_bindings(found)
        temps = attention_temps(found, element)
    else:
        match = match_mlp(fn)
        spec = mlp_configs(match)
        if not persistent:
            module = mlp_stage_module(spec=spec)
        elif not spec.cfg1.warp_specialized:  # persistent_spec's condition
            raise diagnostic(PASS, match.anchor, f"persistent=true needs the TMA GEMMs, from "
                                                 f"{TMA_MIN_ROWS} rows; this MLP has "
                                                 f"{match.rows}")
        else:
            module = mlp_persistent_module(spec)
        binds = bindings(match)
        temps = [TensorType(fn.function_type.inputs.data[match.x].element_type,  # type: ignore
                            [match.rows, match.hidden])]
    for op in module.ops:
        if isinstance(op, sync.StageOp):
            op.attributes[graph.BIND_ATTR] = ArrayAttr(binds[op.sym_name.data])
    return module, temps


def _bound_type(bind: graph.BindAttr, signature: FunctionType,
                temps: list[TensorType]) -> tuple[object, int]:
    """(element type, element count) of the tensor `bind` names."""
    kind, where = bind.kind.data, bind.values
    if kind == "temp":
        found = temps[where[0]]
    elif kind == "result":
        found = signature.outputs.data[where[0]]
    else:  # input; gate_up: the rows of two inputs interleaved; transposed: one transposed
        found = signature.inputs.data[where[0]]
    assert isinstance(found, TensorType)
    count = graph.numel(found) * (2 if kind == "gate_up" else 1)
    return found.element_type, count


def _stage_kernels(program: ModuleOp) -> dict[sync.StageOp, gpu.FuncOp]:
    kernels = {(module.sym_name.data, kernel.sym_name.data): kernel
               for module in program.ops if isinstance(module, gpu.ModuleOp)
               for kernel in module.body.block.ops if isinstance(kernel, gpu.FuncOp)}
    return {op: kernels[(op.kernel.root_reference.data, op.kernel.nested_references.data[-1].data)]
            for op in program.ops if isinstance(op, sync.StageOp)}


def bind_tensor_maps(program: ModuleOp) -> None:
    """A binding of a kernel parameter that is a TMA map takes the parameter's map type (box,
    element, swizzle): the host encodes that map from the tensor it binds."""
    for op, kernel in _stage_kernels(program).items():
        binds = list(op.attributes[graph.BIND_ATTR].data)  # type: ignore[attr-defined]
        params = kernel.body.block.args
        op.attributes[graph.BIND_ATTR] = ArrayAttr([
            bind.as_tensor_map(param.type) if isinstance(param.type, TensorMapType) else bind
            for bind, param in zip(binds, params, strict=False)])


def check_bindings(program: ModuleOp, signature: FunctionType,
                   temps: list[TensorType]) -> None:
    """Each stage's #graph.bind against its kernel's parameters: one per parameter, each tensor
    of the memref's element type and size (a kernel addresses its memref whole: a smaller
    tensor is read past its end, a larger one is not what it computes), or of a TMA map's
    element type with that map type bound (a map's copies stay inside the tensor it is
    encoded from). A mismatch is this pass's own bug, said at the stage before anything runs."""
    for op, kernel in _stage_kernels(program).items():
        name = op.sym_name.data
        binds = list(op.attributes[graph.BIND_ATTR].data)  # type: ignore[attr-defined]
        params = kernel.body.block.args
        if len(binds) != len(params):
            raise diagnostic(PASS, op, f"@{name} binds {len(binds)} argument(s) to a kernel of "
                                       f"{len(params)} parameter(s)")
        for index, (bind, param) in enumerate(zip(binds, params, strict=True)):
            kind = param.type
            element, count = _bound_type(bind, signature, temps)
            if bind.matrix and math.prod(bind.matrix) != count:
                raise diagnostic(PASS, op, f"@{name} binds {bind} over a matrix of "
                                           f"{math.prod(bind.matrix)} elements to a tensor of "
                                           f"{count}")
            if isinstance(kind, TensorMapType):
                if bind.map_type != kind or element != kind.element_type or \
                        (kind.is_im2col and math.prod(kind.im2col_tensor) != count):
                    raise diagnostic(PASS, op, f"@{name} binds {bind} ({element}) to parameter "
                                               f"{index}, a {kind}")
                continue
            if not isinstance(kind, MemRefType):
                raise diagnostic(PASS, op, f"@{name} binds {bind} to parameter {index}, a "
                                           f"{kind}: binds name tensors")
            expected = math.prod(kind.get_shape())
            if element != kind.element_type or count != expected or bind.map_type is not None:
                raise diagnostic(PASS, op, f"@{name} binds {bind} ({count} x {element}) to "
                                           f"parameter {index}, a {kind}")


@dataclass(frozen=True)
class GraphToStagesPass(ModulePass):
    """Replace the module's graph function by the stage program of the pattern it matches."""

    name = PASS

    persistent: bool = False
    """An MLP's two TMA GEMMs (or a conv chain's TMA convs, with conv-pipeline=tma_ws) without
    sync hooks, as persistent grids (at most a block an SM walking its tiles) one after the
    other on one stream, with no dependency: the form that
    runs them fastest where tile sync gains less than a block a tile costs (bench mlp's
    tma:persistent)."""
    conv_pipeline: str = "cp_async"
    """A conv chain's kernels: `cp_async` or `tma_ws` (CONV_PIPELINES)."""
    attention: str = "chain"
    """Self-attention as `chain` (QKV, q · kᵀ, softmax, P · v, output: five kernels, S and P
    in memory) or `fused` (QKV, one attention kernel keeping S and P in registers, output)
    (ATTENTION_FORMS)."""

    def __post_init__(self) -> None:
        if self.conv_pipeline not in CONV_PIPELINES:
            raise ValueError(f"option 'conv_pipeline' must be one of "
                             f"{', '.join(CONV_PIPELINES)}, got {self.conv_pipeline!r}")
        if self.attention not in ATTENTION_FORMS:
            raise ValueError(f"option 'attention' must be one of "
                             f"{', '.join(ATTENTION_FORMS)}, got {self.attention!r}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = single_function(op, PASS)
        program, temps = _stage_program(fn, self.persistent, self.conv_pipeline,
                                        self.attention)
        bind_tensor_maps(program)
        check_bindings(program, signature_of(fn), temps)
        replace_function(op, fn, program)
        op.attributes[graph.TEMPS_ATTR] = ArrayAttr(temps)


__all__ = [
    "ATTENTION_FORMS",
    "COMBINE",
    "CONV_PIPELINES",
    "AttentionMatch",
    "AttentionSpec",
    "ConvChainMatch",
    "ConvChainSpec",
    "FusedAttentionSpec",
    "GraphToStagesPass",
    "MlpMatch",
    "attention_configs",
    "attention_stage_module",
    "bind_tensor_maps",
    "bindings",
    "cached_attention_configs",
    "cached_attention_dependencies",
    "check_bindings",
    "conv_chain_configs",
    "conv_chain_persistent_module",
    "conv_chain_pipelines",
    "conv_chain_stage_module",
    "conv_halo",
    "decode_splits",
    "fused_attention_bindings",
    "fused_attention_configs",
    "fused_attention_dependencies",
    "fused_attention_stage_module",
    "fused_projection_config",
    "match_attention",
    "match_conv_chain",
    "match_mlp",
    "mlp_configs",
    "plan_configs",
    "weight_bind",
]
