"""The torch front end's attention pattern without a GPU: a plain-PyTorch attention block
traced, matched, lowered to the graph level, through graph-to-stages and the cuSync passes to
PTX; shapes and dtypes the kernels refuse stay with torch, with a one-line reason."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.examples.torch_models import OneHeadAttention as Attention  # noqa: E402
from tilesync.frontend.torch.compiler import UnsupportedError, compile_entry  # noqa: E402
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


def test_batched_or_uneven_attention_is_no_piece():
    class Uneven(Attention):
        def forward(self, x):
            q, k, v = self.qkv(x).split([32, 32, 128], dim=-1)
            return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    assert _pieces(Attention().half(), [torch.randn(2, 64, 64, dtype=torch.half)]) == []
    assert _pieces(Uneven(), [torch.randn(64, 64)]) == []


def test_compiled_attention_has_five_kernels_and_their_bindings():
    (piece,) = _pieces(Attention(bias=False).half(), [torch.randn(64, 64, dtype=torch.half)])
    entry = compile_entry(str(graph_function(piece, names=False)))
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
