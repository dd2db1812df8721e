"""The torch front end's attention with heads, over a batch, causal: GPT-2's and nanoGPT's
forms (view + transpose or permute, masked_fill of the causal mask, scaled_dot_product_attention)
matched, lowered to the graph level (reshape, transpose, batched linear and matmul, a causal
softmax) and computed by torch where no GPU runs the piece; a mask that is not provably the
causal one, and attention the graph level cannot express, stay with torch with a reason."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.api import parse  # noqa: E402
from tilesync.examples.torch_models import CausalSelfAttention, GPT2Attention  # noqa: E402
from tilesync.frontend.torch.compiler import (  # noqa: E402
    UnsupportedError,
    plan,
    record_values,
)
from tilesync.frontend.torch.patterns import NOT_CAUSAL, find_pieces, graph_function  # noqa: E402

E, H, T = 128, 2, 64  # width, heads, tokens: small, and whole tiles of every kernel
D = E // H
INF = float("-inf")
TRIL = torch.ones(T, T, dtype=torch.bool).tril()  # True: the query sees the key
PIECE_OP = "torch.ops.tilesync.piece.default"


def _pieces(model, inputs):
    gm = torch.fx.symbolic_trace(model)
    record_values(gm, inputs)
    return find_pieces(gm)


def _graph_text(piece) -> str:
    """The piece's graph function as text, parsed back and verified (graph ops check their
    shapes)."""
    text = str(graph_function(piece))
    parse(text)
    return text


def _heads_lines(lead: list[int], dtype: str = "f16") -> list[str]:
    """The graph ops that view q as heads and merge the heads back, over `lead` ([B] or [])
    sequences of T tokens."""
    perm = "[0, 2, 1, 3]" if lead else "[1, 0, 2]"
    tokens = "x".join(map(str, [*lead, T]))
    viewed = f"tensor<{tokens}x{H}x{D}x{dtype}>"
    heads = "tensor<{}x{dtype}>".format("x".join(map(str, [*lead, H, T, D])), dtype=dtype)
    return [f"graph.reshape %1 : (tensor<{tokens}x{E}x{dtype}>) -> {viewed}",
            f"graph.transpose %4 perm {perm} : ({viewed}) -> {heads}",
            f"graph.transpose %12 perm {perm} : ({heads}) -> {viewed}",
            f"graph.reshape %13 : ({viewed}) -> tensor<{tokens}x{E}x{dtype}>"]


def _forced_matches_eager(model, x, tmp_path):
    """The model compiled with its piece forced ours: the graph calls the piece op (no GPU: it
    computes with torch, eager_piece) and gives the model's output, to the bit."""
    forced = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert [p.choice for p in forced.report.pieces] == ["tilesync"], forced.report.text()
    assert PIECE_OP in forced.graph_module.code
    torch.testing.assert_close(forced(x), model(x), rtol=0, atol=0)
    return forced


class Heads(nn.Module):
    """Self-attention with H heads as models write it: q, k, v viewed as heads (view, then
    transpose or permute), the scores over sqrt(D) and `masked(self, scores)` where given
    (before the scale with `mask_first`), the heads merged back; over a batch (B x T x E) or
    one sequence (T x E)."""

    def __init__(self, batched: bool = True, permute: bool = False, masked=None,
                 mask_first: bool = False, buffer=None):
        super().__init__()
        self.qkv, self.proj = nn.Linear(E, 3 * E), nn.Linear(E, E)
        self.batched, self.permute, self.masked, self.mask_first = \
            batched, permute, masked, mask_first
        if buffer is not None:
            self.register_buffer("mask", buffer)

    def heads(self, z, lead):
        viewed = z.view(*lead, H, D)
        if self.batched:
            return viewed.permute(0, 2, 1, 3) if self.permute else viewed.transpose(1, 2)
        return viewed.permute(1, 0, 2) if self.permute else viewed.transpose(0, 1)

    def forward(self, x):
        lead = (x.shape[0], x.shape[1]) if self.batched else (x.shape[0],)
        q, k, v = self.qkv(x).split(E, dim=-1)
        q, k, v = self.heads(q, lead), self.heads(k, lead), self.heads(v, lead)
        scores = q @ k.transpose(-2, -1)
        if self.masked is not None and self.mask_first:
            scores = self.masked(self, scores)
        scores = scores / math.sqrt(D)
        if self.masked is not None and not self.mask_first:
            scores = self.masked(self, scores)
        o = scores.softmax(dim=-1) @ v
        if self.batched:
            o = o.transpose(1, 2).contiguous().view(*lead, E)
        else:
            o = o.transpose(0, 1).reshape(*lead, E)
        return self.proj(o)


@pytest.mark.parametrize("batched", [True, False], ids=["batch", "one-sequence"])
@pytest.mark.parametrize("permute", [False, True], ids=["transpose", "permute"])
def test_heads_are_matched_as_views_at_the_graph_level(batched, permute, tmp_path):
    model = Heads(batched, permute).half()
    x = torch.randn(*([2] if batched else []), T, E, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    # qkv, split, q k v, 3 x (view, transpose), k's transpose, q · kᵀ, / sqrt(D), softmax, · v,
    # transpose, (contiguous,) view, proj
    assert piece.pattern == "Attention" and piece.refusal is None
    assert len(piece.nodes) == 19 + batched
    assert piece.inputs[1:] == ["qkv.weight", "qkv.bias", "proj.weight", "proj.bias"]
    assert piece.description == (f"Attention [{'2 x ' if batched else ''}{T} tokens, {H} heads "
                                 f"of {D}, {E} -> {3 * E} -> {E}, float16, scale 0.125]")
    text = _graph_text(piece)
    for line in _heads_lines([2] if batched else []):
        assert line in text
    lead = "2x" if batched else ""
    assert f"graph.linear %5, %7 : (tensor<{lead}{H}x{T}x{D}xf16>, tensor<{lead}{H}x{T}x{D}x" \
        f"f16>) -> tensor<{lead}{H}x{T}x{T}xf16>" in text
    assert f"graph.softmax %10 dim -1 scale 1.250000e-01 : tensor<{lead}{H}x{T}x{T}xf16>" in text
    assert f"graph.matmul %11, %9 : (tensor<{lead}{H}x{T}x{T}xf16>, tensor<{lead}{H}x{T}x{D}x" \
        f"f16>) -> tensor<{lead}{H}x{T}x{D}xf16>" in text
    _forced_matches_eager(model, x, tmp_path)


CAUSAL_MASKS = {  # the causal mask as models make it (under symbolic_trace: constants, buffers)
    "invert-tril": dict(masked=lambda m, s: s.masked_fill(
        ~torch.ones(T, T, dtype=torch.bool).tril(), INF)),
    "triu-bool": dict(masked=lambda m, s: s.masked_fill(
        torch.triu(torch.ones(T, T), diagonal=1).bool(), INF)),
    "buffer-sliced-eq-0": dict(  # nanoGPT's bias buffer, block size 2T
        masked=lambda m, s: s.masked_fill(m.mask[:, :, :T, :T] == 0, INF),
        buffer=torch.tril(torch.ones(2 * T, 2 * T)).view(1, 1, 2 * T, 2 * T)),
    "logical-not-buffer": dict(masked=lambda m, s: s.masked_fill(torch.logical_not(m.mask),
                                                                 -math.inf), buffer=TRIL),
    "before-the-scale": dict(masked=lambda m, s: s.masked_fill(~m.mask, INF), buffer=TRIL,
                             mask_first=True),
}


@pytest.mark.parametrize("mask", CAUSAL_MASKS)
def test_a_causal_mask_is_the_causal_softmax(mask, tmp_path):
    model = Heads(**CAUSAL_MASKS[mask]).half()
    x = torch.randn(2, T, E, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.pattern == "Attention" and piece.refusal is None
    assert piece.description == f"Attention [2 x {T} tokens, {H} heads of {D}, {E} -> " \
        f"{3 * E} -> {E}, float16, scale 0.125, causal]"
    assert f"graph.softmax %10 dim -1 scale 1.250000e-01 causal : tensor<2x{H}x{T}x{T}xf16>" \
        in _graph_text(piece)
    forced = _forced_matches_eager(model, x, tmp_path)
    # the mask's nodes went with the piece
    left = {getattr(n.target, "__name__", n.target) for n in forced.graph_module.graph.nodes}
    assert not left & {"masked_fill", "logical_not", "invert", "eq", "mask", "_tensor_constant0"}


NOT_CAUSAL_MASKS = {
    "from-an-input": (lambda m, s, mask: s.masked_fill(~mask, INF), NOT_CAUSAL),
    "minus-1e4": (lambda m, s, mask: s.masked_fill(~m.mask, -1e4),
                  "attention's scores are masked with -10000.0, not -inf"),
    "one-ahead": (lambda m, s, mask: s.masked_fill(
        ~torch.ones(T, T, dtype=torch.bool).tril(1), INF), NOT_CAUSAL),
    "one-above": (lambda m, s, mask: s.masked_fill(
        torch.triu(torch.ones(T, T), diagonal=2).bool(), INF), NOT_CAUSAL),
    "all-seen": (lambda m, s, mask: s.masked_fill(~torch.ones(T, T, dtype=torch.bool), INF),
                 NOT_CAUSAL),
    "one-row": (lambda m, s, mask: s.masked_fill(~m.mask[-1:], INF), NOT_CAUSAL),
}


class _MaskedBy(Heads):
    """Heads whose forward also takes a mask (a model input)."""

    def __init__(self, masked):
        super().__init__(masked=lambda m, s: masked(m, s, m.given), buffer=TRIL)

    def forward(self, x, mask):
        self.given = mask
        return super().forward(x)


@pytest.mark.parametrize("mask", NOT_CAUSAL_MASKS)
def test_a_mask_not_provably_causal_stays_with_torch(mask, tmp_path):
    masked, reason = NOT_CAUSAL_MASKS[mask]
    model = _MaskedBy(masked)
    x = torch.randn(2, T, E)
    (piece,) = _pieces(model, [x, TRIL])
    assert piece.pattern == "Attention" and piece.refusal.startswith(reason)
    compiled = tt.compile(model, [x, TRIL], mode="tilesync", cache_dir=tmp_path)
    (entry,) = compiled.report.pieces
    assert entry.choice == "torch" and entry.reason.startswith(reason)
    assert PIECE_OP not in compiled.graph_module.code
    torch.testing.assert_close(compiled(x, TRIL), model(x, TRIL))


def test_a_mask_computed_from_the_scores_is_no_piece():
    model = Heads(masked=lambda m, s: s.masked_fill(s < 0, INF))
    assert _pieces(model, [torch.randn(2, T, E)]) == []


class _Sdpa(nn.Module):
    """Heads through F.scaled_dot_product_attention(q, k, v, **options), over one sequence."""

    def __init__(self, **options):
        super().__init__()
        self.qkv, self.proj = nn.Linear(E, 3 * E, bias=False), nn.Linear(E, E, bias=False)
        self.options = options

    def forward(self, x):
        q, k, v = self.qkv(x).split(E, dim=-1)
        q, k, v = (q.view(T, H, D).transpose(0, 1), k.view(T, H, D).transpose(0, 1),
                   v.view(T, H, D).transpose(0, 1))
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, **self.options)
        return self.proj(o.transpose(0, 1).reshape(T, E))


@pytest.mark.parametrize("batch", [1, 2])
def test_nanogpt_attention_through_sdpa_is_a_causal_piece(batch, tmp_path):
    model = CausalSelfAttention(E, H).half().eval()
    x = torch.randn(batch, T, E, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.pattern == "Attention" and piece.refusal is None and len(piece.nodes) == 16
    # symbolic_trace records F.scaled_dot_product_attention as Dynamo does: torch._C._nn's
    assert any(n.target is torch._C._nn.scaled_dot_product_attention for n in piece.nodes)
    assert piece.description == f"Attention [{batch} x {T} tokens, {H} heads of {D}, {E} -> " \
        f"{3 * E} -> {E}, float16, scale 0.125, causal]"
    text = _graph_text(piece)
    for line in _heads_lines([batch]):
        assert line in text
    assert f"graph.softmax %10 dim -1 scale 1.250000e-01 causal : " \
        f"tensor<{batch}x{H}x{T}x{T}xf16>" in text
    spec = plan(graph_function(piece, names=False))  # what graph-to-stages makes of it
    assert (spec.heads, spec.sequences, spec.softmax.causal) == (H, batch, True)
    _forced_matches_eager(model, x, tmp_path)


@pytest.mark.parametrize(("options", "softmax"), [
    ({}, "graph.softmax %10 dim -1 scale 1.250000e-01 : "),
    ({"scale": 0.5, "is_causal": True}, "graph.softmax %10 dim -1 scale 5.000000e-01 causal : "),
    ({"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": 1.0},
     "graph.softmax %10 dim -1 : "),
], ids=["default", "scaled-causal", "spelled-out"])
def test_sdpa_over_one_sequence_takes_its_scale_and_mask(options, softmax, tmp_path):
    model = _Sdpa(**options).half()
    x = torch.randn(T, E, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.refusal is None and piece.inputs[1:] == ["qkv.weight", "proj.weight"]
    text = _graph_text(piece)
    assert softmax + f"tensor<{H}x{T}x{T}xf16>" in text
    for line in _heads_lines([]):
        assert line in text
    _forced_matches_eager(model, x, tmp_path)


@pytest.mark.parametrize(("options", "reason"), [
    ({"attn_mask": TRIL}, "scaled_dot_product_attention's attn_mask"),
    ({"dropout_p": 0.1}, "scaled_dot_product_attention's dropout_p 0.1"),
    ({"scale": -1.0}, "attention's scale -1.0 is not positive and finite"),
], ids=["attn-mask", "dropout", "negative-scale"])
def test_sdpa_the_graph_level_cannot_express_stays_with_torch(options, reason, tmp_path):
    model = _Sdpa(**options).half()
    x = torch.randn(T, E, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.pattern == "Attention" and piece.refusal.startswith(reason)
    with pytest.raises(UnsupportedError, match=r"piece 0 \(Attention .*\): " + reason[:20]):
        tt.compile(model, [x], strict=True, cache_dir=tmp_path)


def test_the_forced_causal_piece_trains_with_torchs_gradients(tmp_path):
    """The piece op's backward recomputes it with torch (eager_piece: views, the masked
    softmax) and differentiates that: eager's gradients."""
    model = Heads(**CAUSAL_MASKS["invert-tril"]).half()
    x = torch.randn(2, T, E, dtype=torch.half, requires_grad=True)
    forced = tt.compile(model, [x.detach()], mode="tilesync", cache_dir=tmp_path)
    assert PIECE_OP in forced.graph_module.code
    seed = torch.randn(2, T, E, dtype=torch.half)
    weights = list(model.parameters())
    ours = torch.autograd.grad(forced(x), [x, *weights], seed)
    theirs = torch.autograd.grad(model(x), [x, *weights], seed)
    for mine, eager in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, eager)


def _through_dynamo(model, inputs, tmp_path):
    """(the pieces of the one graph Dynamo captures, tilesync's report of it, the output) of
    `model` compiled with tilesync's backend, every piece forced ours. The pieces are found
    inside the backend: Dynamo drops the placeholders' sources (a buffer's) after it."""
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    found = []

    def backend(gm, example_inputs):
        record_values(gm, list(example_inputs))
        found.extend((piece, _graph_text(piece) if piece.refusal is None else None)
                     for piece in find_pieces(gm))
        return tilesync_backend(gm, example_inputs, mode="tilesync", cache_dir=tmp_path)

    torch._dynamo.reset()
    first = len(LAST_REPORTS)
    out = torch.compile(model, backend=backend)(*inputs)
    (report,) = LAST_REPORTS[first:]
    return found, report, out


def test_gpt2_attention_as_written_through_dynamo(tmp_path):
    """GPT-2's attention as examples/torch_models.py writes it: symbolic_trace cannot build
    its mask (torch.ones of traced sizes), Dynamo can: ones(t, t, dtype=bool).tril(), ~,
    masked_fill(-inf) is the causal softmax."""
    model = GPT2Attention(E, H).half()
    x = torch.randn(2, T, E, dtype=torch.half)
    ((piece, text),), report, out = _through_dynamo(model, [x], tmp_path)
    assert piece.refusal is None and len(piece.nodes) == 23  # with ones, tril and ~
    assert [n.op for n in piece.inputs] == ["placeholder"] * 5  # x, the lifted parameters
    for line in _heads_lines([2]):
        assert line in text
    assert f"graph.softmax %10 dim -1 scale 1.250000e-01 causal : tensor<2x{H}x{T}x{T}xf16>" \
        in text
    (entry,) = report.pieces
    assert entry.description == f"Attention [2 x {T} tokens, {H} heads of {D}, {E} -> " \
        f"{3 * E} -> {E}, float16, scale 0.125, causal]"
    assert entry.choice == "tilesync" and entry.reason.startswith("forced")
    torch.testing.assert_close(out, model(x), rtol=0, atol=0)


def test_a_second_shape_of_the_same_model_is_compiled_for_its_own_sizes(tmp_path):
    """tilesync.frontend.torch.compile captures a model symbolic_trace cannot trace with
    Dynamo's static shapes: compiled again for other inputs, Dynamo would otherwise make the
    sizes that changed symbolic, and the graph, whose pieces need sizes, stay with torch."""
    for shape in ((2, T, E), (1, 2 * T, E)):
        model = GPT2Attention(E, H).half()
        compiled = tt.compile(model, [torch.randn(shape, dtype=torch.half)], emit_ptx=True,
                              cache_dir=tmp_path)
        (piece,) = compiled.report.pieces
        assert piece.description.startswith(f"Attention [{shape[0]} x {shape[1]} tokens, ")


class _TwoLayers(nn.Module):
    """nanoGPT's attention without flash (its bias buffer sliced to T x T, == 0), then one
    masked by a model input: under Dynamo the buffer is a placeholder too."""

    def __init__(self):
        super().__init__()
        self.causal = Heads(masked=lambda m, s: s.masked_fill(m.mask[:, :, :T, :T] == 0, INF),
                            buffer=torch.tril(torch.ones(2 * T, 2 * T)).view(1, 1, 2 * T, 2 * T))
        self.masked = _MaskedBy(NOT_CAUSAL_MASKS["from-an-input"][0])

    def forward(self, x, mask):
        return self.masked(self.causal(x), mask)


def test_dynamo_reads_a_module_buffer_as_a_mask_and_an_input_as_none(tmp_path):
    model = _TwoLayers().half()
    x = torch.randn(2, T, E, dtype=torch.half)
    ((causal, text), (masked, _)), report, out = _through_dynamo(model, [x, TRIL], tmp_path)
    assert causal.refusal is None and "graph.softmax %10 dim -1 scale 1.250000e-01 causal" in text
    assert masked.refusal == NOT_CAUSAL
    assert [(p.choice, p.reason.split(";")[0]) for p in report.pieces] == \
        [("tilesync", "forced"), ("torch", NOT_CAUSAL)]
    torch.testing.assert_close(out, model(x, TRIL), rtol=0, atol=0)
