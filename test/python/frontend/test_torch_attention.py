"""The torch front end's attention pattern without a GPU: a plain-PyTorch attention block
traced, matched, lowered to the graph level, through graph-to-stages and the cuSync passes to
PTX; shapes and dtypes the kernels refuse stay with torch, with a one-line reason."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.examples.torch_models import OneHeadAttention as Attention  # noqa: E402
from tilesync.frontend.torch.compiler import (  # noqa: E402
    STAGES_PASS,
    UnsupportedError,
    compile_entry,
)
from tilesync.frontend.torch.patterns import find_pieces, graph_function  # noqa: E402


def _pieces(model, inputs):
    from tilesync.frontend.torch.compiler import record_values

    gm = torch.fx.symbolic_trace(model)
    record_values(gm, inputs)
    return find_pieces(gm)


def test_attention_is_matched_and_lowered_to_the_graph_level():
    (piece,) = _pieces(Attention().half(), [torch.randn(64, 64, dtype=torch.half)])
    assert piece.pattern == "Attention" and len(piece.nodes) == 10
    assert piece.inputs[1:] == ["qkv.weight", "qkv.bias", "proj.weight", "proj.bias"]
    text = str(graph_function(piece))
    assert "graph.split %0 dim -1 : (tensor<64x192xf16>) -> (tensor<64x64xf16>, " in text
    assert "graph.linear %1, %2 : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>" \
        in text
    assert "graph.softmax %4 dim -1" in text and "graph.matmul %5, %3" in text


@pytest.mark.parametrize("batch", [1, 2])
def test_batched_attention_is_matched_over_the_sequences(batch, tmp_path):
    """x of B x T x C (B = 1 too): q, k, v used as they are, q · kᵀ and P · v batched over
    the sequences (graph.linear's and graph.matmul's batched second operand)."""
    model = Attention().half()
    x = torch.randn(batch, 64, 64, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.pattern == "Attention" and len(piece.nodes) == 10 and piece.refusal is None
    assert piece.description == f"Attention [{batch} x 64 tokens, 1 head of 64, 64 -> 192 -> 64, "\
        "float16]"
    text = str(graph_function(piece))
    qkv = f"tensor<{batch}x64x64xf16>"
    assert f"graph.linear %1, %2 : ({qkv}, {qkv}) -> {qkv}" in text
    assert f"graph.matmul %5, %3 : ({qkv}, {qkv}) -> {qkv}" in text
    assert "graph.reshape" not in text and "graph.transpose" not in text
    forced = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert "torch.ops.tilesync.piece.default" in forced.graph_module.code
    torch.testing.assert_close(forced(x), model(x), rtol=0, atol=0)


def test_uneven_attention_is_no_piece():
    class Uneven(Attention):
        def forward(self, x):
            q, k, v = self.qkv(x).split([32, 32, 128], dim=-1)
            return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    assert _pieces(Uneven(), [torch.randn(64, 64)]) == []


def test_attention_whose_heads_the_fused_kernel_takes_is_also_compiled_fused():
    """Where it runs on a GPU, attention with heads of 64 or 128 columns is compiled to both
    ATTENTION_FORMS (the faster measured runs); the fused form is three kernels, the attention
    kernel reading q, k and v from QKV and waiting for them; a head of 192 has the chain alone."""
    from tilesync.frontend.torch import compiler

    pieces = {width: _pieces(Attention(width).half(), [torch.randn(64, width,
                                                                   dtype=torch.half)])[0]
              for width in (64, 192)}
    for width, forms in ((64, compiler.ATTENTION_FORMS), (192, (STAGES_PASS,))):
        module = graph_function(pieces[width])
        assert compiler.stage_forms(compiler.plan(module), module) == forms, width
    entry = compile_entry((str(graph_function(pieces[64], names=False)),
                           compiler.ATTENTION_FORMS[1]))
    assert set(entry["ptx_by_module"]) == {f"{s}_module" for s in ("qkv", "attention", "out")}
    assert "wgmma.mma_async" in entry["ptx_by_module"]["attention_module"]
    assert "ld.acquire.gpu" in entry["ptx_by_module"]["attention_module"]  # it waits for q, k, v
    assert "#graph.bind<temp 0>, #graph.bind<temp 0>, #graph.bind<temp 0>, " \
        "#graph.bind<temp 1>" in entry["host"]
    assert entry["temps"] == [(64, 192), (64, 64)]


def test_compiled_attention_has_five_kernels_and_their_bindings():
    (piece,) = _pieces(Attention(bias=False).half(), [torch.randn(64, 64, dtype=torch.half)])
    entry = compile_entry((str(graph_function(piece, names=False)), STAGES_PASS))
    assert set(entry["ptx_by_module"]) >= {f"{s}_module" for s in
                                           ("qkv", "scores", "softmax", "context", "out")}
    assert "wgmma.mma_async" in entry["ptx_by_module"]["scores_module"]
    assert "mma.sync" in entry["ptx_by_module"]["context_module"]
    assert "ld.acquire.gpu" in entry["ptx_by_module"]["softmax_module"]  # it waits for S
    assert "#graph.bind<temp 0>, #graph.bind<temp 0>, #graph.bind<temp 1>" in entry["host"]
    assert entry["temps"] == [(64, 192), (64, 64), (64, 64), (64, 64)]


def test_attention_runs_through_the_custom_op_or_stays_with_a_reason(tmp_path):
    model = Attention().half()
    x = torch.randn(64, 64, dtype=torch.half)
    forced = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert "torch.ops.tilesync.piece.default" in forced.graph_module.code
    torch.testing.assert_close(forced(x), model(x))  # no GPU: the op computes with torch
    bf16 = tt.compile(Attention().to(torch.bfloat16), [x.to(torch.bfloat16)],
                      cache_dir=tmp_path).report.pieces[0]
    assert bf16.choice == "torch" and bf16.reason == "graph-to-stages: the softmax kernel takes "\
        "f16, not bf16"
    with pytest.raises(UnsupportedError, match=r"piece 0 \(Attention .*\): graph-to-stages: "
                                               r"48 tokens: the softmax kernel takes a multi"):
        tt.compile(model, [torch.randn(48, 64, dtype=torch.half)], strict=True,
                   cache_dir=tmp_path)


class _Scaled(Attention):
    """Attention whose scores go through `scaled(S)` before the softmax."""

    def __init__(self, scaled, width: int = 64):
        super().__init__(width)
        self.scaled = scaled

    def forward(self, x):
        q, k, v = self.qkv(x).split(self.width, dim=-1)
        weights = torch.softmax(self.scaled(self, q @ k.transpose(-2, -1)), dim=-1)
        return self.proj(weights @ v)


@pytest.mark.parametrize(("scaled", "scale"), [
    (lambda m, s: s * (1 / math.sqrt(m.width)), "1.250000e-01"),
    (lambda m, s: (1 / math.sqrt(m.width)) * s, "1.250000e-01"),
    (lambda m, s: s / math.sqrt(m.width), "1.250000e-01"),
    (lambda m, s: s / m.width ** 0.5, "1.250000e-01"),
    (lambda m, s: torch.mul(s, 0.5), "5.000000e-01"),
    (lambda m, s: s.div(2), "5.000000e-01"),
    (lambda m, s: s / math.sqrt(96), "0.102062076"),  # 1/sqrt(96) as an f32
], ids=["times", "times-left", "over-sqrt", "over-pow", "torch.mul", "div-method", "over-96"])
def test_scaled_attention_is_matched_with_its_scale(scaled, scale, tmp_path):
    model = _Scaled(scaled).half()
    x = torch.randn(64, 64, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.pattern == "Attention" and len(piece.nodes) == 11 and piece.refusal is None
    assert f"graph.softmax %4 dim -1 scale {scale} : tensor<64x64xf16>" in \
        str(graph_function(piece))
    forced = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    code = forced.graph_module.code
    assert "torch.ops.tilesync.piece.default" in code and "softmax" not in code
    # no GPU: the op computes with torch (eager_piece), as the scaled fx nodes did
    torch.testing.assert_close(forced(x), model(x))


def test_the_scale_reaches_the_softmax_kernel():
    model = _Scaled(lambda m, s: s / math.sqrt(m.width), width=64).half()
    (piece,) = _pieces(model, [torch.randn(64, 64, dtype=torch.half)])
    entry = compile_entry((str(graph_function(piece, names=False)), STAGES_PASS))
    assert "0f3E000000" in entry["ptx_by_module"]["softmax_module"]  # 0.125 as f32 bits
    (plain,) = _pieces(Attention().half(), [torch.randn(64, 64, dtype=torch.half)])
    assert "0f3E000000" not in compile_entry((str(graph_function(plain, names=False)),
                                              STAGES_PASS))["ptx_by_module"]["softmax_module"]


class _TensorScaled(Attention):
    def __init__(self):
        super().__init__()
        self.register_buffer("factor", torch.tensor(0.125))

    def forward(self, x):
        q, k, v = self.qkv(x).split(self.width, dim=-1)
        weights = torch.softmax((q @ k.transpose(-2, -1)) * self.factor, dim=-1)
        return self.proj(weights @ v)


@pytest.mark.parametrize(("model", "reason"), [
    (_TensorScaled(), "attention's scores are scaled by a tensor"),
    (_Scaled(lambda m, s: s * -0.125), "attention's scale -0.125 is not positive and finite"),
    (_Scaled(lambda m, s: s / 0), "attention's scale inf is not positive and finite"),
], ids=["tensor", "negative", "over-zero"])
def test_a_scale_the_kernel_cannot_take_stays_with_torch_with_a_reason(model, reason, tmp_path):
    model = model.half()
    x = torch.randn(64, 64, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.pattern == "Attention" and piece.refusal.startswith(reason)
    compiled = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    (entry,) = compiled.report.pieces
    assert entry.choice == "torch" and entry.reason.startswith(reason)
    assert "torch.ops.tilesync" not in compiled.graph_module.code
    with pytest.raises(UnsupportedError, match=r"piece 0 \(Attention .*\): attention's sc"):
        tt.compile(model, [x], strict=True, cache_dir=tmp_path)


def test_a_rounded_quotient_is_no_scale():
    model = _Scaled(lambda m, s: torch.div(s, 8, rounding_mode="floor"))
    assert _pieces(model, [torch.randn(64, 64)]) == []


class _GPTScaled(Attention):
    def forward(self, x):
        q, k, v = self.qkv(x).split(self.width, dim=-1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        return self.proj(torch.softmax(scores, dim=-1) @ v)


def test_dynamo_folds_the_scale_of_a_traced_width(tmp_path, monkeypatch):
    """GPT's `/ math.sqrt(q.size(-1))`: under Dynamo the size is a number of the graph."""
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    monkeypatch.setenv("TILESYNC_MODE", "tilesync")
    model = _GPTScaled(128).half()
    x = torch.randn(64, 128, dtype=torch.half)  # 64 tokens: 1/sqrt(128), not 1/sqrt(64)
    torch._dynamo.reset()
    out = torch.compile(model, backend=tilesync_backend)(x)
    (piece,) = LAST_REPORTS[-1].pieces
    assert piece.description == \
        "Attention [64 rows, 128 -> 384 -> 128, float16, scale 0.0883883]"
    assert piece.choice == "tilesync"
    torch.testing.assert_close(out, model(x))
