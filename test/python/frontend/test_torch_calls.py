"""The torch front end without a GPU, as a user calls it: arguments left out, calls the
compile did not see (other shapes, training again), pieces back to back, the backend's options
and strict through torch.compile, the report's count of pieces of ours. Skipped where torch is
not installed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.frontend.torch.compiler import UnsupportedError  # noqa: E402


def _gelu_mlp(width: int = 128, hidden: int = 256):
    return [torch.nn.Linear(width, hidden), torch.nn.GELU("tanh"),
            torch.nn.Linear(hidden, width)]


class Masked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(64, 64)

    def forward(self, x, mask=None):
        y = self.a(x)
        if mask is not None:
            y = y.masked_fill(mask, 0.0)
        return y


def test_an_argument_left_out_keeps_its_default(tmp_path):
    """forward(x, mask=None) compiled with x alone: traced with mask None (not a placeholder
    that `if mask is not None` would see as a Proxy); a call that passes a mask is one the
    trace does not stand for, and runs the module."""
    model, x = Masked(), torch.randn(4, 64)
    compiled = tt.compile(model, [x], cache_dir=tmp_path)
    mask = torch.rand(4, 64) > 0.5
    with torch.no_grad():
        assert torch.equal(compiled(x), model(x))
        assert torch.equal(compiled(x, mask), model(x, mask))
        assert torch.equal(compiled(x, mask=mask), model(x, mask=mask))


class MaskedAttention(torch.nn.Module):
    def __init__(self, c=256, h=4):
        super().__init__()
        self.h, self.qkv, self.o = h, torch.nn.Linear(c, 3 * c), torch.nn.Linear(c, c)

    def forward(self, x, mask=None):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o(y.transpose(1, 2).reshape(b, t, c))


def test_an_attn_mask_left_out_is_no_reason(tmp_path):
    model = MaskedAttention().half().eval()
    x = torch.randn(2, 64, 256, dtype=torch.half)
    (piece,) = tt.compile(model, [x], cache_dir=tmp_path).report.pieces
    assert piece.reason.startswith("inputs on cpu"), piece.reason


class SelfAttention(torch.nn.Module):
    def __init__(self, c=256, h=4):
        super().__init__()
        self.h, self.qkv, self.o = h, torch.nn.Linear(c, 3 * c), torch.nn.Linear(c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, c))


def test_a_call_with_other_shapes_runs_torchs_path(tmp_path):
    """A piece is compiled for the examples' shapes (its sizes fixed): a call with another
    shape runs the module itself, not the piece."""
    model = SelfAttention().half().eval()
    x = torch.randn(2, 64, 256, dtype=torch.half)
    compiled = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert "torch.ops.tilesync.piece" in compiled.graph_module.code
    with torch.no_grad():
        for other in (torch.randn(3, 32, 256, dtype=torch.half), x[:1]):
            assert torch.equal(compiled(other), model(other))
        assert torch.equal(compiled(x), model(x))


def test_a_piece_called_with_other_shapes_is_computed_by_torch():
    """The op itself checks its inputs against the ones its runner was compiled for (a
    runner allocates its result at the compiled shape): others go to torch's path."""
    from tilesync.frontend.torch.ops import register, run_piece

    def runner(inputs):
        raise AssertionError("the compiled runner called with inputs it does not take")

    ops = [("linear", ("in", 0), ("in", 1), None)]
    piece_id = register(runner, ops, takes=[((4, 8), torch.float32), ((16, 8), torch.float32)])
    x, w = torch.randn(6, 8), torch.randn(16, 8)
    (out,) = run_piece([x, w], piece_id)
    assert torch.equal(out, F.linear(x, w))


def test_training_again_after_compiling_runs_the_module(tmp_path):
    """symbolic_trace bakes `self.training` (nanoGPT's dropout): after model.train() the
    compiled model runs the module, dropout and all."""
    from tilesync.examples.torch_models import CausalSelfAttention

    model = CausalSelfAttention(n_embd=256, n_head=4, dropout=0.5).eval()
    x = torch.randn(2, 64, 256)
    compiled = tt.compile(model, [x], cache_dir=tmp_path)
    model.train()
    torch.manual_seed(5)
    ours = compiled(x)
    torch.manual_seed(5)
    assert torch.equal(ours, model(x))
    model.eval()
    with torch.no_grad():
        assert torch.equal(compiled(x), model(x))


def test_two_pieces_back_to_back_are_both_rewritten(tmp_path, monkeypatch, capsys):
    """Two MLPs in a row, the first's output the second's input: the second piece reads the
    first's replacement (forced, through tt.compile and torch.compile)."""
    from tilesync.frontend.torch.backend import LAST_REPORTS

    model = torch.nn.Sequential(*_gelu_mlp(), *_gelu_mlp()).half().eval()
    x = torch.randn(16, 128, dtype=torch.half)
    compiled = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert compiled.graph_module.code.count("torch.ops.tilesync.piece") == 2
    monkeypatch.setenv("TILESYNC_MODE", "tilesync")
    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    torch._dynamo.reset()
    dynamo = torch.compile(model, backend="tilesync")
    with torch.no_grad():
        assert torch.equal(compiled(x), model(x))
        assert torch.equal(dynamo(x), model(x))
    assert "stays with torch" not in capsys.readouterr().err
    assert [p.choice for p in LAST_REPORTS[-1].pieces] == ["tilesync", "tilesync"]


def test_the_backend_function_is_not_replaced_by_its_module():
    import tilesync.frontend.torch.backend as module  # noqa: F401  (imports the submodule)
    from tilesync.frontend.torch.backend import tilesync_backend

    assert callable(tt.backend) and tt.backend.__module__ == "tilesync.frontend.torch"
    assert tilesync_backend.__module__ == "tilesync.frontend.torch.backend"


def test_the_backend_takes_torch_compiles_options_and_modes(tmp_path, capsys):
    """torch.compile(..., options={...}) hands tilesync's options over in one dict, and its
    own mode names are not tilesync's: neither leaves the graph to torch for an error."""
    from tilesync.frontend.torch.backend import LAST_REPORTS

    model = torch.nn.Sequential(*_gelu_mlp()).half().eval()
    x = torch.randn(16, 128, dtype=torch.half)
    for how in ({"options": {"mode": "tilesync", "cache_dir": str(tmp_path)}},
                {"mode": "max-autotune"}):
        torch._dynamo.reset()
        with torch.no_grad():
            assert torch.equal(torch.compile(model, backend="tilesync", **how)(x), model(x))
        assert "stays with torch" not in capsys.readouterr().err
        expected = "tilesync" if "options" in how else "torch"  # forced, or on the CPU
        assert LAST_REPORTS[-1].pieces[0].choice == expected, how


def test_strict_through_torch_compile_raises_its_one_line(tmp_path):
    model = torch.nn.Sequential(*_gelu_mlp()).half().eval()
    x = torch.randn(16, 128, dtype=torch.half)
    for backend in ("tilesync", lambda gm, inputs: tt.backend(gm, inputs, strict=True)):
        torch._dynamo.reset()
        options = {"options": {"strict": True, "cache_dir": str(tmp_path)}} \
            if backend == "tilesync" else {}
        with pytest.raises(UnsupportedError) as raised:
            torch.compile(model, backend=backend, **options)(x)
        assert str(raised.value).startswith("piece 0 (Linear→GeLU→Linear") and \
            "inputs on cpu" in str(raised.value) and "\n" not in str(raised.value)


def test_forced_pieces_computed_by_torch_are_not_counted_as_ours(tmp_path):
    model = torch.nn.Sequential(*_gelu_mlp()).half().eval()
    report = tt.compile(model, [torch.randn(16, 128, dtype=torch.half)], mode="tilesync",
                        cache_dir=tmp_path).report
    assert report.pieces[0].choice == "tilesync" and not report.pieces[0].runs_ours
    assert "1 piece(s) matched; 0 run as stage programs, 1 forced but computed by torch" in \
        report.text()
