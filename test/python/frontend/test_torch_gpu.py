"""The torch front end on the GPU: each example's pieces run as stage programs (forced) and
match eager PyTorch, are captured in a CUDA graph and replayed, and come from the cache the
second time; in auto mode a piece runs our way only where it measured faster, and the whole
graph in its fastest measured form (the choice cached)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch_checks import (  # noqa: E402
    assert_chosen_by_measurement,
    assert_graph_chosen_by_measurement,
)

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.examples.torch_models import example  # noqa: E402
from tilesync.frontend.torch import compiler  # noqa: E402

pytestmark = pytest.mark.gpu
TOL = 2e-2


def _rel(out, ref) -> float:
    assert torch.isfinite(out).all()
    return float((out.float() - ref.float()).norm() / ref.float().norm())


def _matches_called_and_replayed(compiled, model, inputs, graph_replays) -> None:
    """Eager's output called, on fresh inputs, and from CUDA graph replays alternating the two
    (no memset between runs)."""
    with torch.no_grad():
        assert _rel(compiled(*inputs), model(*inputs)) < TOL
        fresh = [torch.randn_like(t) for t in inputs]
        for source, replayed in zip((fresh, inputs, fresh),
                                    graph_replays(compiled, inputs, (fresh, inputs, fresh)),
                                    strict=True):
            assert _rel(replayed, model(*source)) < TOL


@pytest.fixture(autouse=True)
def _torch_cuda():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")


PIECES = {"llama_mlp": 1, "llama65b_mlp_tp8": 1, "gpt2_block": 2, "gpt2_attention": 1,
          "gpt2_sdpa_attention": 1, "gpt2_decode": 1}
"""The pieces of each example run our way here: GPT-2's block has its attention and its MLP;
the decoding step's attention (after a KV cache) its fused program with split keys."""


@pytest.mark.parametrize("name", list(PIECES))
def test_example_matches_eager_captures_and_caches(name, tmp_path, graph_replays, monkeypatch):
    model, inputs = example(name, "cuda")
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path, strict=True)
    assert [p.choice for p in compiled.report.pieces] == ["tilesync"] * PIECES[name]
    with torch.no_grad():
        ref = model(*inputs)
        assert _rel(compiled(*inputs), ref) < TOL
        fresh = [torch.randn_like(t) for t in inputs]  # the same function on other data
        assert _rel(compiled(*fresh), model(*fresh)) < TOL
        for source, replayed in zip((fresh, inputs),
                                    graph_replays(compiled, inputs, (fresh, inputs)),
                                    strict=True):
            assert _rel(replayed, model(*source)) < TOL
    monkeypatch.setattr(compiler, "compile_entry",
                        lambda *args: pytest.fail("a cached piece was compiled again"))
    recorded, cached = [], []  # each graph's shapes come from the cache too, nothing run
    monkeypatch.setattr(compiler, "record_values", lambda *args, f=compiler.record_values:
                        recorded.append(1) or f(*args))
    monkeypatch.setattr(compiler, "_recorded", lambda *args, f=compiler._recorded:
                        cached.append(1) or f(*args))
    again = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path)
    assert all(piece.cached for piece in again.report.pieces)
    assert recorded and len(cached) == len(recorded)
    monkeypatch.undo()
    with torch.no_grad():
        assert _rel(again(*fresh), model(*fresh)) < TOL


@pytest.mark.parametrize("name", ["llama_mlp", "nerf_mlp_rays"])
def test_auto_mode_runs_ours_only_where_measured_faster(name, tmp_path):
    model, inputs = example(name, "cuda")
    compiled = tt.compile(model, inputs, cache_dir=tmp_path)
    (piece,) = compiled.report.pieces
    assert_chosen_by_measurement(piece)
    if compiled.report.ours:
        assert_graph_chosen_by_measurement(compiled.report)
    with torch.no_grad():
        assert _rel(compiled(*inputs), model(*inputs)) < TOL


@pytest.mark.parametrize("form", compiler.MLP_FORMS)
def test_each_form_of_an_mlp_matches_eager_and_replays(form, tmp_path, graph_replays,
                                                       monkeypatch):
    """Each of MLP_FORMS alone (the tuning's choice taken out of the way), forced: LlamaMLP on
    1024 rows (the TMA GEMMs) matches eager, and again on fresh inputs and from CUDA graph
    replays (no memset between runs: the persistent form has no semaphores to reset)."""
    monkeypatch.setattr(compiler, "mlp_forms", lambda spec: (form,))
    model, inputs = example("llama_mlp", "cuda", rows=1024)
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path, strict=True)
    (piece,) = compiled.report.pieces
    assert piece.choice == "tilesync" and not piece.variants
    _matches_called_and_replayed(compiled, model, inputs, graph_replays)


@pytest.mark.parametrize("rows", [1, 4, 16])
@pytest.mark.parametrize("name", ["llama_mlp", "llama65b_mlp_tp8"])
def test_an_mlp_of_a_few_rows_streams_its_weights(name, rows, tmp_path, graph_replays):
    """Decoding's rows (at most STREAMING_ROWS): both GEMMs on the 16-row streaming tiles,
    GEMM2's 128-wide k-steps each waiting on the several GEMM1 tiles of H they read; forced,
    it matches eager, on fresh inputs and from CUDA graph replays (no memset between)."""
    from tilesync.kernels.choice import STREAMING_ROWS

    model, inputs = example(name, "cuda", rows=rows)
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path, strict=True)
    (piece,) = compiled.report.pieces
    assert piece.choice == "tilesync" and rows <= STREAMING_ROWS
    _matches_called_and_replayed(compiled, model, inputs, graph_replays)


@pytest.mark.parametrize("name", ["llama_mlp", "nerf_mlp_rays"])
def test_backend_runs_each_graph_in_its_fastest_measured_form(name, tmp_path, monkeypatch):
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    tt.finish_compiles()  # no full compile of an earlier test's pipeline still under way
    model, inputs = example(name, "cuda")
    reports = []
    for _ in range(2):  # the second time from the cache
        torch._dynamo.reset()
        first = len(LAST_REPORTS)
        with torch.no_grad():
            out = torch.compile(model, backend=tilesync_backend)(*inputs)
            assert _rel(out, model(*inputs)) < TOL
        reports.append(LAST_REPORTS[first:])
    assert reports[0] and len(reports[0]) == len(reports[1])
    for measured, cached in zip(*reports, strict=True):
        assert_graph_chosen_by_measurement(measured)
        # the second compile takes the first's choice where it was stored (not one for
        # torch measured while this graph's pipeline ran its fast tier), else measures again
        assert not measured.graph.cached and cached.graph.cached == measured.graph.stored
        if measured.graph.stored:
            assert cached.graph.form == measured.graph.form


@pytest.mark.parametrize("name", ["llama_mlp", "gpt2_block"])
def test_a_model_trains_through_its_compiled_pieces(name, tmp_path):
    """Forward on the GPU kernels, backward recomputed by torch (parameters require grad, as in
    training): the gradients are eager's to fp16 tolerance."""
    model, inputs = example(name, "cuda")
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path, strict=True)
    assert [p.choice for p in compiled.report.pieces] == ["tilesync"] * PIECES[name]
    x = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    weights = [p for p in model.parameters() if p.requires_grad]
    out = compiled(*x)
    seed = torch.randn_like(out)
    ours = torch.autograd.grad(out, [*x, *weights], seed, allow_unused=True)
    theirs = torch.autograd.grad(model(*x), [*x, *weights], seed, allow_unused=True)
    for mine, eager in zip(ours, theirs, strict=True):
        assert (mine is None) == (eager is None)
        if eager is not None:
            assert _rel(mine, eager) < TOL
