"""The torch front end without a GPU: nn.Identity and eval-mode dropout are no computation, so
a piece whose layers they sit between is matched (compiler.without_identities) and takes those
only it reads; a dropout that drops (in training, or F.dropout's default training=True) is no
identity; a model compiled in eval mode and trained again runs its dropout. Skipped where
torch is not installed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
nn = torch.nn

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.frontend.torch.backend import LAST_REPORTS  # noqa: E402

MLP = "Linear→GeLU→Linear [16 rows, 128 -> 256 -> 128, float16]"


def _linears() -> tuple[nn.Linear, nn.Linear]:
    return nn.Linear(128, 256), nn.Linear(256, 128)


def _sequential(*middle: nn.Module) -> nn.Sequential:
    first, second = _linears()
    return nn.Sequential(first, *middle, second).half().eval()


def _module_calls(compiled) -> list[str]:
    return [n.target for n in compiled.graph_module.graph.nodes if n.op == "call_module"]


def _forced(model, x, tmp_path):
    """The model through tt.compile with its pieces forced ours (no GPU: the op computes with
    torch), checked to give the model's output to the bit."""
    compiled = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    with torch.no_grad():
        assert torch.equal(compiled(x), model(x))
    return compiled


@pytest.mark.parametrize("middle", [
    lambda: [nn.GELU("tanh"), nn.Identity()],
    lambda: [nn.Identity(), nn.GELU("tanh")],
    lambda: [nn.GELU("tanh"), nn.Identity(), nn.Identity()],
    lambda: [nn.GELU("tanh"), nn.Dropout(0.5)],
    lambda: [nn.Dropout(0.5), nn.GELU("tanh"), nn.Identity()],
], ids=["act-identity", "identity-act", "two-identities", "act-dropout", "dropout-act-identity"])
def test_identities_between_an_mlps_layers_leave_it_an_mlp(middle, tmp_path):
    """Linear → GeLU → Linear with nn.Identity or an eval-mode nn.Dropout on either side of the
    activation: one piece, which takes the identities (no module call is left)."""
    x = torch.randn(16, 128, dtype=torch.half)
    compiled = _forced(_sequential(*middle()), x, tmp_path)
    assert [(p.description, p.choice) for p in compiled.report.pieces] == [(MLP, "tilesync")]
    assert "torch.ops.tilesync.piece" in compiled.graph_module.code
    assert _module_calls(compiled) == []


class FunctionalDropout(nn.Module):
    """GPT's MLP with F.dropout between its layers: `training=self.training` (no dropout in
    eval mode), or left out (torch's default, training=True: a dropout in eval mode too)."""

    def __init__(self, follows_the_module: bool = True):
        super().__init__()
        self.fc1, self.fc2 = _linears()
        self.follows_the_module = follows_the_module

    def forward(self, x):
        h = F.gelu(self.fc1(x), approximate="tanh")
        if self.follows_the_module:
            return self.fc2(F.dropout(h, 0.5, training=self.training))
        return self.fc2(F.dropout(h, 0.5))


def test_functional_dropout_in_eval_mode_leaves_an_mlp_through_both_tracers(tmp_path,
                                                                           monkeypatch):
    """F.dropout(h, p, training=self.training) in eval mode: symbolic_trace and Dynamo both
    write training=False in, and the MLP is one piece either way."""
    model = FunctionalDropout().half().eval()
    x = torch.randn(16, 128, dtype=torch.half)
    compiled = _forced(model, x, tmp_path)
    assert [(p.description, p.choice) for p in compiled.report.pieces] == [(MLP, "tilesync")]
    assert "dropout" not in compiled.graph_module.code
    monkeypatch.setenv("TILESYNC_MODE", "tilesync")
    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    torch._dynamo.reset()
    with torch.no_grad():
        assert torch.equal(torch.compile(model, backend="tilesync")(x), model(x))
    assert [(p.description, p.choice) for p in LAST_REPORTS[-1].pieces] == [(MLP, "tilesync")]


@pytest.mark.parametrize("model", [
    lambda: _sequential(nn.GELU("tanh"), nn.Dropout(0.5)).train(),
    lambda: FunctionalDropout().half().train(),
    lambda: FunctionalDropout(follows_the_module=False).half().eval(),
], ids=["module-in-training", "functional-in-training", "functional-default-in-eval"])
def test_a_dropout_that_drops_is_no_identity(model, tmp_path):
    """A dropout in training, or F.dropout's default training=True in eval mode, drops: the
    MLP around it is no piece, and the compiled model drops as the model does."""
    model = model()
    x = torch.randn(16, 128, dtype=torch.half)
    compiled = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert compiled.report.pieces == []
    with torch.no_grad():
        torch.manual_seed(3)
        ours = compiled(x)
        torch.manual_seed(3)
        assert torch.equal(ours, model(x))


def test_a_model_trained_after_compiling_runs_its_dropout(tmp_path, monkeypatch):
    """Compiled in eval mode, the MLP's piece takes its dropout; after model.train() the
    compiled model runs the module (tt.compile: CompiledModule.fits) or a graph traced again
    in training (torch.compile: Dynamo's guard on `training`), whose dropout drops."""
    model = _sequential(nn.GELU("tanh"), nn.Dropout(0.5))
    x = torch.randn(16, 128, dtype=torch.half)
    compiled = _forced(model, x, tmp_path)
    assert [p.choice for p in compiled.report.pieces] == ["tilesync"]
    assert _module_calls(compiled) == []  # the dropout went with the piece
    monkeypatch.setenv("TILESYNC_MODE", "tilesync")
    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    torch._dynamo.reset()
    dynamo = torch.compile(model, backend="tilesync")
    with torch.no_grad():
        evaluated = model(x)
        assert torch.equal(dynamo(x), evaluated)
        assert [p.choice for p in LAST_REPORTS[-1].pieces] == ["tilesync"]
        model.train()
        for name, fn in (("tt.compile", compiled), ("torch.compile", dynamo)):
            torch.manual_seed(5)
            ours = fn(x)
            torch.manual_seed(5)
            assert torch.equal(ours, model(x)), name
            assert not torch.equal(ours, evaluated), name  # it dropped
        assert LAST_REPORTS[-1].pieces == []  # traced again in training: no MLP around it
        model.eval()
        assert torch.equal(compiled(x), evaluated) and torch.equal(dynamo(x), evaluated)


def test_pieces_back_to_back_take_the_identities_only_they_read(tmp_path):
    """Dropout → MLP (a dropout inside) → Dropout → MLP (an identity inside) → Identity: the
    first dropout and the one between go with the piece that reads them (each piece reads
    the identity's input, the first piece's output for the second), the last identity reads
    the second piece's output and stays."""
    first, second = _sequential(nn.GELU("tanh"), nn.Dropout(0.5)), \
        _sequential(nn.Identity(), nn.GELU("tanh"))
    model = nn.Sequential(nn.Dropout(0.1), *first, nn.Dropout(0.2), *second,
                          nn.Identity()).eval()
    x = torch.randn(16, 128, dtype=torch.half)
    compiled = _forced(model, x, tmp_path)
    assert [(p.description, p.choice) for p in compiled.report.pieces] == \
        [(MLP, "tilesync")] * 2
    assert compiled.graph_module.code.count("torch.ops.tilesync.piece") == 2
    assert _module_calls(compiled) == [str(len(model) - 1)]


class ConvChainWithIdentities(nn.Module):
    """conv → BN → Identity → ReLU → Dropout2d → conv → BN: with the eval-mode norms folded
    and the identities left out, a conv chain."""

    def __init__(self, channels: int = 64):
        super().__init__()
        self.c1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.c2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.b1, self.b2 = nn.BatchNorm2d(channels), nn.BatchNorm2d(channels)
        self.identity, self.drop = nn.Identity(), nn.Dropout2d(0.5)

    def forward(self, x):
        return self.b2(self.c2(self.drop(F.relu(self.identity(self.b1(self.c1(x)))))))


def test_identities_in_a_conv_chain_with_folded_norms(tmp_path):
    model = ConvChainWithIdentities().half().eval()
    with torch.no_grad():  # statistics that are not the identity, so the fold shows
        for bn in (model.b1, model.b2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 64, 8, 8, dtype=torch.half)
    compiled = _forced(model, x, tmp_path)
    assert [(p.description.split(" [")[0], p.choice) for p in compiled.report.pieces] == \
        [("Conv→ReLU→Conv", "tilesync")]
    assert _module_calls(compiled) == []
