"""The torch front end's attention scaled by a number computed from shapes, without a GPU:
1 / math.sqrt(q.size(-1)), q.shape[-1] ** -0.5 and the like, a constant of the trace made for
the examples' shapes, are folded to their number (one head, heads, scaled_dot_product_attention's
scale); a scale computed from a tensor's values, or from a size Dynamo keeps dynamic, stays a
refusal with its node named; a call of another head width never uses the folded number: it
runs the model (tt.compile), is traced again (torch.compile) or is refused by the op itself.
Skipped where torch is not installed."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
nn = torch.nn

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.examples.torch_models import OneHeadAttention  # noqa: E402
from tilesync.frontend.torch.backend import LAST_REPORTS  # noqa: E402
from tilesync.frontend.torch.compiler import record_values  # noqa: E402
from tilesync.frontend.torch.patterns import find_pieces, graph_function  # noqa: E402

PIECE_OP = "torch.ops.tilesync.piece.default"


def _pieces(model, inputs):
    gm = torch.fx.symbolic_trace(model)
    record_values(gm, inputs)
    return find_pieces(gm)


def _forced_matches_eager(model, inputs, tmp_path):
    """The model through tt.compile, its piece forced ours (no GPU: the op computes with
    torch): the graph calls the piece, reads no size, and gives the model's output to the
    bit."""
    forced = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path)
    assert [p.choice for p in forced.report.pieces] == ["tilesync"], forced.report.text()
    code = forced.graph_module.code
    assert PIECE_OP in code and "sqrt" not in code and "size" not in code
    with torch.no_grad():
        assert torch.equal(forced(*inputs), model(*inputs))
    return forced


class OneHead(OneHeadAttention):
    """One head of 128 columns whose scores go through `scaled(q, S)`."""

    def __init__(self, scaled):
        super().__init__(128)
        self.scaled = scaled

    def forward(self, x):
        q, k, v = self.qkv(x).split(self.width, dim=-1)
        scores = self.scaled(q, torch.matmul(q, k.transpose(-2, -1)))
        return self.proj(torch.softmax(scores, dim=-1) @ v)


def _over_d(q, s):
    d = q.shape[-1]
    return s / math.sqrt(d)


@pytest.mark.parametrize("scaled", [
    lambda q, s: s / math.sqrt(q.size(-1)),
    lambda q, s: s * (1.0 / math.sqrt(q.shape[-1])),
    lambda q, s: s * q.size(-1) ** -0.5,
    lambda q, s: s / q.size()[-1] ** 0.5,
    _over_d,
], ids=["over-sqrt-size", "times-one-over-sqrt-shape", "times-pow", "over-size()-pow",
        "over-sqrt-d"])
def test_a_scale_computed_from_shapes_is_folded_to_its_number(scaled, tmp_path):
    model = OneHead(scaled).half()
    x = torch.randn(64, 128, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.refusal is None and piece.shape_constants
    assert piece.description == "Attention [64 rows, 128 -> 384 -> 128, float16, scale 0.0883883]"
    assert "graph.softmax %4 dim -1 scale 0.0883883461 : tensor<64x64xf16>" in \
        str(graph_function(piece))
    _forced_matches_eager(model, [x], tmp_path)


class Heads(nn.Module):
    """Four heads over a batch, the scale from the heads' width: `d = q.shape[-1]`, the scores
    over math.sqrt(d), or scaled_dot_product_attention's scale=1 / math.sqrt(q.size(-1))."""

    def __init__(self, sdpa: bool, width: int = 256, heads: int = 4):
        super().__init__()
        self.sdpa, self.heads = sdpa, heads
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, scale=1.0 / math.sqrt(q.size(-1)))
        else:
            d = q.shape[-1]
            y = (torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)).softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, c))


@pytest.mark.parametrize("sdpa", [False, True], ids=["matmul-softmax", "sdpa"])
def test_heads_scaled_by_their_width_are_folded(sdpa, tmp_path):
    model = Heads(sdpa).half().eval()
    x = torch.randn(2, 64, 256, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.refusal is None and piece.shape_constants
    assert piece.description == "Attention [2 x 64 tokens, 4 heads of 64, 256 -> 768 -> 256, " \
        "float16, scale 0.125]"
    _forced_matches_eager(model, [x], tmp_path)


class DataScaled(OneHeadAttention):
    """Scores scaled by a learned temperature, a tensor: no constant of the trace."""

    def __init__(self):
        super().__init__(128)
        self.temperature = nn.Parameter(torch.tensor(-2.0))

    def forward(self, x):
        q, k, v = self.qkv(x).split(self.width, dim=-1)
        scores = (q @ k.transpose(-2, -1)) * self.temperature.exp()
        return self.proj(torch.softmax(scores, dim=-1) @ v)


def test_a_scale_computed_from_a_tensor_stays_refused_with_its_node(tmp_path):
    model = DataScaled().half()
    x = torch.randn(64, 128, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    reason = "attention's scores are scaled by a tensor or a dynamic size (exp), not a number "\
        "of the traced shapes; the softmax kernel takes a python number, a constant of the piece"
    assert piece.refusal == reason and not piece.shape_constants
    compiled = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    (entry,) = compiled.report.pieces
    assert entry.choice == "torch" and entry.reason == reason
    assert f"piece 0: {entry.description}: torch ({reason})" in compiled.report.text()
    with torch.no_grad():
        assert torch.equal(compiled(x), model(x))


def attend(x, w_qkv, w_out):
    """Four heads of a width the weights give, scaled by 1 / math.sqrt(q.size(-1))."""
    b, t, c = x.shape
    q, k, v = F.linear(x, w_qkv).split(c, dim=-1)
    q, k, v = (z.view(b, t, 4, c // 4).transpose(1, 2) for z in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return F.linear((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c), w_out)


def one_head(x, w_qkv, w_out):
    """One head of the input's width, scaled by q.size(-1) ** -0.5."""
    q, k, v = F.linear(x, w_qkv).split(x.shape[-1], dim=-1)
    scores = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
    return F.linear(scores.softmax(-1) @ v, w_out)


def _inputs(width: int, lead: tuple[int, ...]) -> list:
    scale = width ** -0.5
    return [torch.randn(*lead, width, dtype=torch.half),
            torch.randn(3 * width, width, dtype=torch.half) * scale,
            torch.randn(width, width, dtype=torch.half) * scale]


@pytest.mark.parametrize(("fn", "lead"), [(attend, (2, 64)), (one_head, (64,))],
                         ids=["heads", "one-head"])
def test_another_head_width_never_uses_the_folded_scale(fn, lead, tmp_path):
    """Compiled for heads of 64 (scale 0.125), called with heads of 128: tt.compile's module
    runs the function itself (CompiledModule.fits), and the piece op called with the other
    shapes refuses them rather than compute with 0.125 (torch's path would: one head has no
    reshape to fail)."""
    width = 256 if fn is attend else 64
    compiled_for, other = _inputs(width, lead), _inputs(2 * width, lead)
    compiled = _forced_matches_eager(fn, compiled_for, tmp_path)
    assert compiled.report.pieces[0].description.endswith("float16, scale 0.125]")
    assert torch.equal(compiled(*other), fn(*other))
    with pytest.raises(ValueError, match=r"reads a number from the shapes it was traced for"):
        compiled.graph_module(*other)


def test_torch_compile_traces_another_head_width_again(tmp_path, monkeypatch):
    """Through torch.compile: with static shapes Dynamo traces a call of another width again
    (its graph's scale that width's); with dynamic ones (torch.compile's default, after a
    second shape) the scale is a symbolic size, refused, and torch computes it."""
    monkeypatch.setenv("TILESYNC_MODE", "tilesync")
    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    for dynamic, scales in ((False, ["scale 0.125]", "scale 0.0883883]"]),
                            (None, ["scale 0.125]", "float16]"])):
        torch._dynamo.reset()
        compiled = torch.compile(one_head, backend="tilesync", dynamic=dynamic)
        for width, scale in zip((64, 128), scales, strict=True):
            inputs = _inputs(width, (64,))
            count = len(LAST_REPORTS)
            assert torch.equal(compiled(*inputs), one_head(*inputs))
            (report,) = LAST_REPORTS[count:]  # traced again for the new width
            (piece,) = report.pieces
            assert piece.description.endswith(scale), (dynamic, width)
            if dynamic is None and width == 128:
                assert piece.choice == "torch" and piece.reason.startswith(
                    "attention's scores are scaled by a tensor or a dynamic size ("), piece.reason
            else:
                assert piece.choice == "tilesync"
