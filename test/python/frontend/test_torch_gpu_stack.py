"""NeRF's MLP through the torch front end on the GPU, as one Kitsune pipeline (forced, strict):
the example as the library writes it (64-wide inputs) and as NeRF's paper does (63- and 27-wide
encodings, 3 colours: the adapters pad them), and MeshGraphNets' edge MLP (its LayerNorm a
stage of the pipeline), against an fp32 reference from the same fp16
inputs and against eager, on fresh inputs with the results filled with NaN before the kernels
run, after 20 runs back to back (the queues' tickets carry on, no memset), in a CUDA graph
replayed on new data, through torch.compile(backend="tilesync"), and from the cache the second
time; with `tune` both allotments compiled and timed, without it the ILP's alone (auto mode:
test_torch_gpu.py)."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from torch_checks import relative_error  # noqa: E402

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.examples.torch_models import example  # noqa: E402
from tilesync.frontend.torch import compiler  # noqa: E402
from tilesync.frontend.torch.ops import PipelineRunner  # noqa: E402
from tilesync.frontend.torch.stack import PATTERN  # noqa: E402

pytestmark = pytest.mark.gpu
TOL = 2e-2
RUNS = 20


@pytest.fixture(autouse=True)
def _poisoned(fp32_on_cuda, monkeypatch):
    def filled_with_nan(self, shape, device):
        return torch.full(shape, float("nan"), dtype=self.dtype, device=device)

    monkeypatch.setattr(PipelineRunner, "_new", filled_with_nan)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One compile cache for the module: each NeRF compiles (two pipelines, ~10 s each on an
    H200's host) once, the later tests read it back."""
    return tmp_path_factory.mktemp("tilesync-cache")


def _reference(model, inputs):
    """fp32 of the same fp16 parameters and inputs."""
    with torch.no_grad():
        return copy.deepcopy(model).float()(*[t.float() for t in inputs])


@pytest.mark.parametrize("name", ["nerf_mlp", "nerf_mlp_rays", "edge_mlp"])
def test_stack_runs_as_one_pipeline(name, cache, graph_replays, monkeypatch):
    model, inputs = example(name, "cuda")
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=cache, strict=True,
                          tune=True)
    (piece,) = compiled.report.pieces
    assert piece.description.startswith(PATTERN) and piece.choice == "tilesync"
    # both allotments were compiled and timed; the faster runs
    assert sorted(name for name, _ in piece.variants) == sorted(compiler.STACK_PASSES)
    assert piece.variants[0][1] <= piece.variants[1][1]
    with torch.no_grad():
        assert relative_error(compiled(*inputs), _reference(model, inputs)) < TOL
        assert relative_error(compiled(*inputs), model(*inputs)) < TOL
        fresh = [torch.randn_like(t) for t in inputs]
        for _ in range(RUNS):
            out = compiled(*fresh)
        assert relative_error(out, _reference(model, fresh)) < TOL
        for source, replayed in zip((fresh, inputs),
                                    graph_replays(compiled, inputs, (fresh, inputs)),
                                    strict=True):
            assert relative_error(replayed, _reference(model, source)) < TOL
    monkeypatch.setattr(compiler, "compile_stack_entry",
                        lambda *args: pytest.fail("a cached piece was compiled again"))
    again = tt.compile(model, inputs, mode="tilesync", cache_dir=cache)
    assert again.report.pieces[0].cached  # the ILP's allotment, cached by the tuned compile
    assert again.report.pieces[0].variants == []
    with torch.no_grad():
        assert relative_error(again(*fresh), _reference(model, fresh)) < TOL


def test_nerf_through_torch_compile(cache, monkeypatch):
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    monkeypatch.setenv("TILESYNC_CACHE", str(cache))
    monkeypatch.setenv("TILESYNC_MODE", "tilesync")
    model, inputs = example("nerf_mlp_rays", "cuda")
    torch._dynamo.reset()
    first = len(LAST_REPORTS)
    with torch.no_grad():
        # the entry point's function (backend="tilesync" where the package is installed)
        out = torch.compile(model, backend=tilesync_backend)(*inputs)
        assert relative_error(out, _reference(model, inputs)) < TOL
    (piece,) = [p for r in LAST_REPORTS[first:] for p in r.pieces]
    assert piece.description.startswith(PATTERN) and piece.choice == "tilesync"


@pytest.fixture
def tiered_runners(monkeypatch):
    """The pipeline runners made while the test runs, tiered (TIERED_PIPELINES on)."""
    from tilesync.runtime import dataflow as pipelines

    monkeypatch.setattr(pipelines, "TIERED_PIPELINES", True)
    runners = []
    made = PipelineRunner.__init__

    def recorded(self, *args, **kwargs):
        made(self, *args, **kwargs)
        runners.append(self)

    monkeypatch.setattr(PipelineRunner, "__init__", recorded)
    return runners


@pytest.fixture
def held_full_compiles(monkeypatch):
    """An event the pipelines' full compiles wait for before they start (set it to let them)."""
    import threading

    from tilesync.runtime import dataflow as pipelines

    gate = threading.Event()
    compile_in_full = pipelines.compile_in_full

    def held(*args):
        gate.wait(60)
        return compile_in_full(*args)

    monkeypatch.setattr(pipelines, "compile_in_full", held)
    return gate


def test_a_first_compile_runs_the_fast_tier_then_the_full_kernels(tmp_path, tiered_runners):
    """A fresh cache: the pipeline starts on ptxas's fast-compile kernels while the full ones
    compile on a thread, then runs those; both give the model's results."""
    runners = tiered_runners
    model, inputs = example("nerf_mlp", "cuda")
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path, strict=True)
    (runner,) = runners
    with torch.no_grad():
        first = compiled(*inputs)
        assert relative_error(first, _reference(model, inputs)) < TOL
        assert runner.upgrade(wait=True) and runner.full and not runner.program.fast
        assert relative_error(compiled(*inputs), _reference(model, inputs)) < TOL
    runners.clear()
    again = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path)
    with torch.no_grad():
        again(*inputs)
    assert all(r.full for r in runners)  # the full kernels from the disk cache, no fast tier


def test_a_capture_on_the_fast_tier_waits_for_the_full_kernels(tmp_path, tiered_runners,
                                                               held_full_compiles):
    """A CUDA graph captured while the full kernels still compile records the full ones (the
    runner waits for their compile and loads them in relaxed capture mode, on the same rings),
    and its replays give the model's results."""
    import threading

    gate = held_full_compiles
    model, inputs = example("nerf_mlp", "cuda")
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path, strict=True)
    (runner,) = tiered_runners
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            compiled(*inputs)  # warm-up, on the fast tier
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        assert not runner.full and runner.program.fast
        threading.Timer(0.5, gate.set).start()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = compiled(*inputs)
        assert runner.full and not runner.program.fast
        for _ in range(3):
            out.fill_(float("nan"))
            graph.replay()
        torch.cuda.synchronize()
        assert relative_error(out, _reference(model, inputs)) < TOL


def test_an_auto_compile_on_the_fast_tier_caches_only_what_ours_won(tmp_path, tiered_runners,
                                                                    held_full_compiles):
    """Auto mode with the full kernels still compiling: the piece and the graph's forms are
    measured on the fast tier and chosen, cached only where ours won; once the full kernels
    land, the chosen form (a replay of a CUDA graph, say) runs them, and a second compile
    measures again and caches what it measured."""
    from tilesync.frontend.torch import graph_choice
    from tilesync.frontend.torch.ops import kernel_moves

    gate = held_full_compiles
    model, inputs = example("nerf_mlp", "cuda")
    compiled = tt.compile(model, inputs, cache_dir=tmp_path)
    (runner,) = tiered_runners
    assert not runner.full
    # cached only where ours won (the full kernels only run faster)
    (piece,) = compiled.report.pieces
    tuned = list((tmp_path / "torch-tuning").glob("*.pkl"))
    assert bool(tuned) == (piece.choice == "tilesync")
    chosen = compiled.report.graph
    kept = list((tmp_path / "torch-graph").glob("*.pkl"))
    assert bool(kept) == (chosen is not None and graph_choice.is_ours(chosen.form))
    moves = kernel_moves()
    with torch.no_grad():
        assert relative_error(compiled(*inputs), _reference(model, inputs)) < TOL
        gate.set()
        tt.finish_compiles()
        assert runner.full and kernel_moves() == moves + 1
        for _ in range(3):  # a replay captured on the fast tier captures again
            assert relative_error(compiled(*inputs), _reference(model, inputs)) < TOL
    again = tt.compile(model, inputs, cache_dir=tmp_path)
    assert list((tmp_path / "torch-tuning").glob("*.pkl"))
    with torch.no_grad():
        assert relative_error(again(*inputs), _reference(model, inputs)) < TOL
