"""Hugging Face's Conv1D (GPT-2's c_fc, c_proj, c_attn: x.view(-1, K), addmm by a K x N
weight, the view back) in the torch front end: its MLP and attention are the pieces nn.Linear
gives, with the same descriptions, under symbolic_trace and Dynamo; at the graph level each of
its weights is read through graph.transpose, which graph-to-stages binds as
#graph.bind<transposed i>; computed by torch (eager_piece, the piece op forced) a piece gives
the module's output; an addmm scaled by beta or alpha, or by an activation, is no piece; the
transposed weight a runner keeps follows an in-place update of its parameter."""

from __future__ import annotations

import functools
import math

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.api import lower, parse  # noqa: E402
from tilesync.dialects import graph, sync  # noqa: E402
from tilesync.examples.torch_models import (  # noqa: E402
    EXAMPLES,
    GPT2MLP,
    HFGPT2MLP,
    Conv1D,
    GPT2Attention,
    HFGPT2Attention,
)
from tilesync.frontend.torch.compiler import record_values  # noqa: E402
from tilesync.frontend.torch.ops import DerivedWeights, eager_piece  # noqa: E402
from tilesync.frontend.torch.patterns import find_pieces, graph_function  # noqa: E402

E, H, T = 128, 2, 64  # width, heads, tokens: whole tiles of every kernel
D = E // H
PIECE_OP = "torch.ops.tilesync.piece.default"


def _randomized(model: nn.Module, seed: int = 0) -> nn.Module:
    """`model` with every parameter drawn again (Conv1D starts its biases at zero, which would
    hide a bias left out), small enough that fp16 keeps the values."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.05)
    return model


def _linear_twin(hf: nn.Module, twin: nn.Module) -> nn.Module:
    """`twin` (the nn.Linear model) holding `hf`'s weights: each Conv1D's K x N weight
    transposed into the Linear of the same name."""
    linears = dict(twin.named_modules())
    with torch.no_grad():
        for name, conv in hf.named_modules():
            if isinstance(conv, Conv1D):
                linears[name].weight.copy_(conv.weight.t())
                linears[name].bias.copy_(conv.bias)
    return twin.to(next(hf.parameters()).dtype).eval()


def _traced(model, inputs):
    """(gm, its pieces, the tensors of its placeholders and get_attr nodes, gm's inputs)
    under symbolic_trace."""
    gm = torch.fx.symbolic_trace(model)
    env = record_values(gm, inputs)
    return gm, find_pieces(gm), env, inputs


def _dynamo(model, inputs):
    """(gm, its pieces, the tensors of its placeholders, gm's inputs) of the one graph Dynamo
    captures (its parameters are placeholders, inputs of gm), matched while Dynamo hands it
    over, as the backend does (a placeholder's source is gone after)."""
    graphs = []

    def capture(gm, example_inputs):
        env = record_values(gm, list(example_inputs))
        graphs.append((gm, find_pieces(gm), env, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=capture, dynamic=False)(*inputs)
    (found,) = graphs
    return found


def _piece_value(piece, env):
    """The piece computed by torch from its inputs' values (each a placeholder or a get_attr
    node: a model input or a parameter)."""
    (value,) = eager_piece(piece.ops, [env[ref.name] for ref in piece.inputs], piece.results)
    return value


def _fx_value(gm, node, inputs):
    """What `node` of `gm` computes on `inputs` (torch.fx's interpreter)."""
    values = {}

    class Keep(torch.fx.Interpreter):
        def run_node(self, n):
            values[n] = super().run_node(n)
            return values[n]

    with torch.no_grad():
        Keep(gm).run(*inputs)
    return values[node]


# ---------------------------------------------------------------------------------------------
# The MLP
# ---------------------------------------------------------------------------------------------


def _mlp():
    return _randomized(HFGPT2MLP(4 * E, E)).half().eval()


def test_conv1d_mlp_is_the_linear_mlp_piece():
    hf = _mlp()
    x = torch.randn(2, T, E, dtype=torch.half)
    _, (piece,), _, _ = _traced(hf, [x])
    _, (linear,), _, _ = _traced(_linear_twin(hf, GPT2MLP(E)), [x])
    assert piece.description == linear.description == \
        f"Linear→GeLU→Linear [{2 * T} rows, {E} -> {4 * E} -> {E}, float16]"
    assert [r.name for r in piece.inputs] == ["hidden_states", "c_fc_weight", "c_fc_bias",
                                              "c_proj_weight", "c_proj_bias"]
    # every node of the two Conv1Ds goes with the piece, their size reads too
    targets = [n.target for n in piece.nodes]
    assert targets.count(torch.addmm) == 2 and targets.count("size") == 4
    assert {n.op for n in piece.inputs[1:]} == {"get_attr"}


def test_conv1d_mlp_graph_function_transposes_its_weights():
    """graph.transpose %w perm [1, 0] of each K x N weight argument, read as the linear's
    N x K weight: the IR says what addmm computes, and graph-to-stages binds the transpose."""
    x = torch.randn(2, T, E, dtype=torch.half)
    _, (piece,), _, _ = _traced(_mlp(), [x])
    module = graph_function(piece)
    fn = next(iter(module.ops))
    ops = list(fn.body.block.ops)
    assert [op.name for op in ops] == ["graph.transpose", "graph.linear", "graph.gelu",
                                       "graph.transpose", "graph.linear", "func.return"]
    t1, fc, gelu, t2, proj, _ = ops
    args = fn.body.block.args
    for transpose, linear, weight, bias in ((t1, fc, args[1], args[2]),
                                            (t2, proj, args[3], args[4])):
        assert transpose.input is weight and transpose.permutation == (1, 0)
        assert linear.weight is transpose.result and linear.bias is bias
    assert fc.input is args[0] and gelu.input is fc.result and proj.input is gelu.result
    text = str(module)
    assert (f"%0 = graph.transpose %c_fc_weight perm [1, 0] : (tensor<{E}x{4 * E}xf16>) -> "
            f"tensor<{4 * E}x{E}xf16>") in text
    assert (f"%1 = graph.linear %hidden_states, %0, %c_fc_bias : (tensor<2x{T}x{E}xf16>, "
            f"tensor<{4 * E}x{E}xf16>, tensor<{4 * E}xf16>) -> tensor<2x{T}x{4 * E}xf16>") in text
    parse(text)  # verified: the transposes' and linears' shapes agree

    lower(module, ["graph-to-stages"])
    binds = {op.sym_name.data: [str(b) for b in op.attributes[graph.BIND_ATTR].data]
             for op in module.ops if isinstance(op, sync.StageOp)}
    assert binds["gemm1"][1].startswith("#graph.bind<transposed 1")
    assert binds["gemm2"][1].startswith("#graph.bind<transposed 3")


def test_conv1d_mlp_piece_computes_the_modules_output(tmp_path):
    hf = _mlp()
    x = torch.randn(2, T, E, dtype=torch.half)
    gm, (piece,), env, gm_inputs = _traced(hf, [x])
    torch.testing.assert_close(_piece_value(piece, env), _fx_value(gm, piece.output, gm_inputs),
                               rtol=0, atol=0)
    forced = tt.compile(hf, [x], mode="tilesync", cache_dir=tmp_path)
    assert [p.choice for p in forced.report.pieces] == ["tilesync"]
    assert PIECE_OP in forced.graph_module.code and "addmm" not in forced.graph_module.code
    with torch.no_grad():
        torch.testing.assert_close(forced(x), hf(x), rtol=0, atol=0)


def test_conv1d_mlp_under_dynamo_is_the_same_piece(tmp_path):
    """Dynamo's graph (sizes constants, parameters placeholders) gives the piece
    symbolic_trace gives: the same description and, without names, the same graph function
    (the compile cache's key); computed by torch, the module's output."""
    hf = _mlp()
    x = torch.randn(2, T, E, dtype=torch.half)
    _, (traced,), _, _ = _traced(hf, [x])
    gm, (piece,), env, gm_inputs = _dynamo(hf, [x])
    assert piece.description == traced.description
    assert all(ref.op == "placeholder" for ref in piece.inputs)
    assert str(graph_function(piece, names=False)) == str(graph_function(traced, names=False))
    torch.testing.assert_close(_piece_value(piece, env), _fx_value(gm, piece.output, gm_inputs),
                               rtol=0, atol=0)
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    torch._dynamo.reset()
    backend = functools.partial(tilesync_backend, mode="tilesync", cache_dir=tmp_path)
    with torch.no_grad():
        out = torch.compile(hf, backend=backend, dynamic=False)(x)
        torch.testing.assert_close(out, hf(x), rtol=0, atol=0)
    assert [p.choice for p in LAST_REPORTS[-1].pieces] == ["tilesync"]


class Pair(nn.Module):
    """Two layers, Conv1D or nn.Linear, with an activation (or none) between them."""

    def __init__(self, conv1d: bool, act):
        super().__init__()
        if conv1d:
            self.fc1, self.fc2 = Conv1D(4 * E, E), Conv1D(E, 4 * E)
        else:
            self.fc1, self.fc2 = nn.Linear(E, 4 * E), nn.Linear(4 * E, E)
        self.act = act

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(h if self.act is None else self.act(h))


@pytest.mark.parametrize("act", [None, nn.SiLU(), nn.GELU()], ids=["none", "silu", "gelu"])
def test_conv1d_pairs_are_the_linear_pairs(act):
    """Other activations, and none: the first Conv1D's output, a view, is no attention's.
    (ReLU pairs of nn.Linear are MLP stacks, stack.py's, which reads nn.Linear only.)"""
    hf = _randomized(Pair(conv1d=True, act=act)).eval()
    x = torch.randn(3, 16, E)
    gm, (piece,), env, gm_inputs = _traced(hf, [x])
    _, (linear,), _, _ = _traced(_linear_twin(hf, Pair(conv1d=False, act=act)), [x])
    name = {None: "Linear→Linear", "SiLU": "Linear→SiLU→Linear", "GELU": "Linear→GeLU→Linear"}
    assert piece.description == linear.description == \
        f"{name[act and type(act).__name__]} [48 rows, {E} -> {4 * E} -> {E}, float32]"
    torch.testing.assert_close(_piece_value(piece, env), _fx_value(gm, piece.output, gm_inputs))


class ScaledConv1D(Conv1D):
    """Conv1D whose addmm scales (beta · bias + alpha · x · w: no graph.linear)."""

    def __init__(self, nf, nx, beta=1.0, alpha=1.0):
        super().__init__(nf, nx)
        self.beta, self.alpha = beta, alpha

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)  # noqa: RUF005 - as Conv1D writes it
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight, beta=self.beta,
                        alpha=self.alpha)
        return x.view(size_out)


class ActivationProduct(nn.Module):
    """A GPT-2 MLP whose second product is Conv1D's addmm by a model input, not a parameter:
    no layer (its transpose would be an activation's, made at every call)."""

    def __init__(self):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(4 * E, E), Conv1D(E, 4 * E)

    def forward(self, x, y):
        h = nn.functional.gelu(self.c_fc(x), approximate="tanh")
        size_out = h.size()[:-1] + (E,)  # noqa: RUF005 - as Conv1D writes it
        return torch.addmm(self.c_proj.bias, h.view(-1, h.size(-1)), y).view(size_out)


@pytest.mark.parametrize("scales", [dict(beta=0.5), dict(alpha=2.0), dict(beta=0)])
@pytest.mark.parametrize("tracer", ["symbolic_trace", "dynamo"])
def test_a_scaled_addmm_is_no_piece(scales, tracer):
    model = _randomized(HFGPT2MLP(4 * E, E))
    model.c_proj = ScaledConv1D(E, 4 * E, **scales)
    x = torch.randn(2, T, E)
    _, pieces, _, _ = (_traced if tracer == "symbolic_trace" else _dynamo)(model.eval(), [x])
    assert pieces == []
    model.c_proj = ScaledConv1D(E, 4 * E)  # beta and alpha 1 written out: a Conv1D
    _, pieces, _, _ = (_traced if tracer == "symbolic_trace" else _dynamo)(model.eval(), [x])
    assert [p.pattern for p in pieces] == ["Linear→GeLU→Linear"]


def test_an_addmm_by_an_activation_is_no_piece():
    x, y = torch.randn(2, T, E), torch.randn(4 * E, E)
    _, pieces, _, _ = _traced(ActivationProduct(), [x, y])
    assert pieces == []


# ---------------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------------


class TracedAttention(nn.Module):
    """GPT-2's causal attention (heads viewed and transposed, scores over sqrt(D), the tril
    mask with -inf) through Conv1D or nn.Linear projections, as symbolic_trace traces it (the
    mask a buffer of the whole T x T, folded into a constant)."""

    def __init__(self, conv1d: bool):
        super().__init__()
        if conv1d:
            self.c_attn, self.c_proj = Conv1D(3 * E, E), Conv1D(E, E)
        else:
            self.c_attn, self.c_proj = nn.Linear(E, 3 * E), nn.Linear(E, E)
        self.register_buffer("bias", torch.ones(T, T, dtype=torch.bool).tril())

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, H, D).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        weights = scores.masked_fill(~self.bias, float("-inf")).softmax(dim=-1)
        return self.c_proj((weights @ v).transpose(1, 2).reshape(b, t, c))


def _attention_description(b: int) -> str:
    return (f"Attention [{b} x {T} tokens, {H} heads of {D}, {E} -> {3 * E} -> {E}, float16, "
            f"scale {D ** -0.5:.6g}, causal]")


def test_conv1d_attention_is_the_linear_attention_piece():
    """Under symbolic_trace: the output projection's size reads of the merged heads go with
    the piece; the QKV and output weights are transposed at the graph level, nothing else
    changes (heads, scale, the causal mask)."""
    hf = _randomized(TracedAttention(conv1d=True)).half().eval()
    x = torch.randn(2, T, E, dtype=torch.half)
    gm, (piece,), env, gm_inputs = _traced(hf, [x])
    _, (linear,), _, _ = _traced(_linear_twin(hf, TracedAttention(conv1d=False)), [x])
    assert piece.refusal is None
    assert piece.description == linear.description == _attention_description(2)
    ops = [op.name for op in next(iter(graph_function(piece).ops)).body.block.ops]
    twin_ops = [op.name for op in next(iter(graph_function(linear).ops)).body.block.ops]
    # the same program but for a transpose before each projection's linear
    assert ops[0] == "graph.transpose" and ops[-3] == "graph.transpose"
    assert ops[1:-3] + ops[-2:] == twin_ops
    torch.testing.assert_close(_piece_value(piece, env), _fx_value(gm, piece.output, gm_inputs),
                               rtol=0, atol=0)


def test_hf_gpt2_attention_under_dynamo_is_the_linear_attention_piece(tmp_path):
    """The example as Hugging Face writes the mask (its tril buffer sliced to the length: only
    Dynamo captures it) matches as GPT2Attention's piece, and computed by torch gives the
    module's output; through tilesync's compile, which falls back on Dynamo, too."""
    hf = _randomized(HFGPT2Attention(E, H)).half().eval()
    x = torch.randn(2, T, E, dtype=torch.half)
    gm, (piece,), env, gm_inputs = _dynamo(hf, [x])
    _, (linear,), _, _ = _dynamo(_linear_twin(hf, GPT2Attention(E, H)), [x])
    assert piece.refusal is None
    assert piece.description == linear.description == _attention_description(2)
    # the two weights', and q, k and v viewed as heads, merged back
    assert str(graph_function(piece, names=False)).count("graph.transpose") == 2 + 3 + 1
    torch.testing.assert_close(_piece_value(piece, env), _fx_value(gm, piece.output, gm_inputs),
                               rtol=0, atol=0)
    forced = tt.compile(hf, [x], mode="tilesync", cache_dir=tmp_path)
    assert [p.choice for p in forced.report.pieces] == ["tilesync"], forced.report.text()
    with torch.no_grad():
        torch.testing.assert_close(forced(x), hf(x), rtol=0, atol=0)


def test_hf_examples_are_registered_as_sequence_models():
    from tilesync.examples.torch_models import SEQUENCE_MODELS, example

    assert {"hf_gpt2_block", "hf_gpt2_attention"} <= set(EXAMPLES) & SEQUENCE_MODELS
    model, (x,) = example("hf_gpt2_block", rows=32)
    assert x.shape == (1, 32, 768)
    assert isinstance(model.mlp.c_fc, Conv1D) and model.mlp.c_fc.weight.shape == (768, 3072)


# ---------------------------------------------------------------------------------------------
# The transposed weight a runner keeps
# ---------------------------------------------------------------------------------------------


def test_the_transposed_weight_follows_in_place_updates():
    """StageRunner binds #graph.bind<transposed i> through DerivedWeights: made once per
    version of its parameter; an in-place update (an optimizer step, load_state_dict) makes
    it again; another tensor (a copy at a reused address, an activation) is never taken for
    the one it was made from."""
    derived = DerivedWeights()
    conv = Conv1D(6, 4)
    weight = conv.weight
    first = derived.get("transposed", (1,), [weight])
    assert first.shape == (6, 4) and first.is_contiguous() and torch.equal(first, weight.t())
    assert derived.get("transposed", (1,), [weight]) is first  # the same version: kept

    with torch.no_grad():
        weight.mul_(-2)  # in place: a new version of the same tensor
    second = derived.get("transposed", (1,), [weight])
    assert second is not first and torch.equal(second, weight.t())

    weight.grad = torch.ones_like(weight)
    torch.optim.SGD([weight], lr=0.5).step()
    third = derived.get("transposed", (1,), [weight])
    assert torch.equal(third, weight.t()) and not torch.equal(third, second)

    conv.load_state_dict({"weight": torch.zeros(4, 6), "bias": torch.zeros(6)})
    assert torch.equal(derived.get("transposed", (1,), [weight]), torch.zeros(6, 4))

    copy = weight.detach().clone()  # another tensor: made from it, not taken from the cache
    with torch.no_grad():
        copy.fill_(3)
    assert torch.equal(derived.get("transposed", (1,), [copy]), torch.full((6, 4), 3.0))


def test_derived_weights_are_kept_per_binding():
    """Each binding keeps its own derived tensor (an MLP's two transposed weights, SwiGLU's
    interleaved one), so calls alternate without making any again."""
    derived = DerivedWeights()
    w1, w2 = nn.Parameter(torch.randn(64, 256)), nn.Parameter(torch.randn(256, 64))
    gate, up = nn.Parameter(torch.randn(16, 8)), nn.Parameter(torch.randn(16, 8))
    kept = [derived.get("transposed", (1,), [w1]), derived.get("transposed", (3,), [w2]),
            derived.get("gate_up", (4, 5), [gate, up])]
    again = [derived.get("transposed", (1,), [w1]), derived.get("transposed", (3,), [w2]),
             derived.get("gate_up", (4, 5), [gate, up])]
    assert all(a is b for a, b in zip(kept, again, strict=True))
    assert kept[2].shape == (32, 8) and torch.equal(kept[2][8:16], up[:8])
