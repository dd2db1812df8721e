"""The torch front end without a GPU: pattern matching, the graph level, graph-to-stages and
PTX for the example models, the fallback and its reasons, errors, the cache and the backend
entry point. Skipped where torch is not installed."""

from __future__ import annotations

import io
import math
import re
import time

import pytest

torch = pytest.importorskip("torch")

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.examples.torch_models import EXAMPLES, LlamaMLP, example  # noqa: E402
from tilesync.frontend.progress import Progress  # noqa: E402
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


class GeluMLP(torch.nn.Module):
    def __init__(self, d=128, h=512, approximate="tanh", bias=True):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(d, h, bias=bias), torch.nn.Linear(h, d, bias=bias)
        self.approximate = approximate

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x), approximate=self.approximate))


def test_swiglu_is_matched_and_lowered_to_the_graph_level():
    model = LlamaMLP(128, 256).half()
    (piece,) = _pieces(model, [torch.randn(2, 8, 128, dtype=torch.half)])
    assert piece.pattern == "SwiGLU MLP"
    assert piece.inputs[1:] == ["gate_proj.weight", "up_proj.weight", "down_proj.weight"]
    assert piece.inputs[0].op == "placeholder"
    text = str(graph_function(piece))
    assert "graph.silu" in text and "graph.mul" in text and text.count("graph.linear") == 3
    assert "tensor<2x8x128xf16>" in text


def test_swiglu_keeps_the_down_projections_bias(tmp_path):
    """A SwiGLU MLP whose down projection has a bias: the piece adds it (the second GEMM's
    bias epilogue), not the output without it."""
    model = LlamaMLP(128, 256).half()
    model.down_proj = torch.nn.Linear(256, 128).half()
    x = torch.randn(16, 128, dtype=torch.half)
    (piece,) = _pieces(model, [x])
    assert piece.inputs[-1] == "down_proj.bias"
    assert "graph.linear %3, %down_proj_weight, %down_proj_bias" in str(graph_function(piece))
    forced = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert forced.report.pieces[0].choice == "tilesync"
    assert torch.equal(forced(x), model(x))


def test_gelu_mlp_pattern_reads_biases_and_the_approximation():
    (piece,) = _pieces(GeluMLP(), [torch.randn(16, 128)])
    assert piece.pattern == "Linear→GeLU→Linear" and len(piece.inputs) == 5
    text = str(graph_function(piece))
    assert 'graph.gelu %0 approximate "tanh"' in text
    assert "graph.linear %x, %fc1_weight, %fc1_bias : (tensor<16x128xf32>" in text


def test_a_hidden_layer_used_twice_is_no_piece():
    class Escapes(GeluMLP):
        def forward(self, x):
            h = torch.nn.functional.gelu(self.fc1(x), approximate="tanh")
            return self.fc2(h), h

    assert _pieces(Escapes(), [torch.randn(16, 128)]) == []


def test_compile_leaves_unsupported_pieces_to_torch_with_a_reason(tmp_path):
    model = GeluMLP(approximate="none").half()
    x = torch.randn(16, 128, dtype=torch.half)
    compiled = tt.compile(model, [x], cache_dir=tmp_path)
    (piece,) = compiled.report.pieces
    assert piece.choice == "torch" and "exact (erf) GeLU stays in torch" in piece.reason
    assert torch.equal(compiled(x), model(x))
    f32 = tt.compile(GeluMLP(), [torch.randn(16, 128)], cache_dir=tmp_path)
    assert "take f16 or bf16, not f32" in f32.report.pieces[0].reason
    f64 = tt.compile(GeluMLP().double(), [torch.randn(16, 128, dtype=torch.double)],
                     cache_dir=tmp_path)
    assert "float64 tensors: tilesync takes float16 or bfloat16" in f64.report.pieces[0].reason


def test_strict_raises_one_line_errors(tmp_path):
    with pytest.raises(UnsupportedError, match=r"piece 0 .*: .*not f32"):
        tt.compile(GeluMLP(), [torch.randn(16, 128)], strict=True, cache_dir=tmp_path)
    # a supported piece on the CPU: the device is the reason
    with pytest.raises(UnsupportedError, match="inputs on cpu: tilesync's kernels run on NVIDIA"):
        tt.compile(GeluMLP().half(), [torch.randn(16, 128, dtype=torch.half)], strict=True,
                   cache_dir=tmp_path)
    with pytest.raises(UnsupportedError, match="mode must be one of"):
        tt.compile(GeluMLP(), [torch.randn(16, 128)], mode="fast")


def test_forced_pieces_are_rewritten_into_the_custom_op(tmp_path):
    model = LlamaMLP(128, 256).to(torch.bfloat16)
    x = torch.randn(2, 8, 128, dtype=torch.bfloat16)
    compiled = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    code = compiled.graph_module.code
    assert "torch.ops.tilesync.piece.default" in code and "silu" not in code
    assert torch.equal(compiled(x), model(x))  # no GPU: the op computes with torch
    assert compiled.report.pieces[0].choice == "tilesync"


class WritesInPlace(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.mlp = torch.nn.BatchNorm1d(128), GeluMLP()

    def forward(self, x):
        x.mul_(2)
        return self.mlp(self.norm(x))


def test_compiling_leaves_the_examples_and_buffers_as_they_were(tmp_path):
    model = WritesInPlace().train()
    x = torch.ones(16, 128)
    before = {name: b.clone() for name, b in model.named_buffers()}
    tt.compile(model, [x], cache_dir=tmp_path)
    assert torch.equal(x, torch.ones(16, 128))
    for name, b in model.named_buffers():
        assert torch.equal(b, before[name]), name


def test_a_linear_input_without_rows_stays_with_torch_and_says_why(tmp_path):
    model, x = GeluMLP().half(), torch.randn(128, dtype=torch.half)
    compiled = tt.compile(model, [x], emit_ptx=True, cache_dir=tmp_path)
    (piece,) = compiled.report.pieces
    assert piece.choice == "torch" and "shape [128] has no row dimension" in piece.reason
    assert piece.compile_seconds is None  # refused before compiling
    assert torch.equal(compiled(x), model(x))


def test_a_compiled_piece_keeps_its_cubins_where_it_is_told(tmp_path, monkeypatch):
    """load_program (the StageRunner's) loads each module's PTX with the cubin directory the
    front end gives it (Options.cubin_dir: under cache_dir), not the runtime's default."""
    from tilesync.frontend.torch import ops
    from tilesync.frontend.torch.compiler import STAGES_PASS, Options
    from tilesync.runtime import program

    (piece,) = _pieces(GeluMLP().half(), [torch.randn(16, 128, dtype=torch.half)])
    entry = compile_entry((str(graph_function(piece, names=False)), STAGES_PASS))
    loaded = []

    class FakeModule:
        def function(self, name, params):
            return name

    def fake_load(ptx, name, cache_dir=None):
        loaded.append((name, cache_dir))
        return FakeModule()

    monkeypatch.setattr(program, "load_ptx", fake_load)
    cubin_dir = Options.make(cache_dir=tmp_path).cubin_dir
    assert cubin_dir == tmp_path / "cubins"
    ops.load_program(entry, cubin_dir)
    assert loaded and all(where == cubin_dir for _, where in loaded)


def test_a_damaged_cached_entry_is_compiled_again(tmp_path):
    import pickle

    from tilesync.frontend.torch.compiler import is_whole_entry

    x = torch.randn(16, 128, dtype=torch.half)
    first = tt.compile(GeluMLP().half(), [x], emit_ptx=True, cache_dir=tmp_path).report
    (path,) = (tmp_path / "torch").glob("*.pkl")
    key, value = pickle.loads(path.read_bytes())
    assert is_whole_entry(value) and not first.pieces[0].cached
    for damaged in ({**value, "ptx_by_module": {}}, {"ptx_by_module": value["ptx_by_module"]},
                    None):
        assert not is_whole_entry(damaged)
        path.write_bytes(pickle.dumps((key, damaged)))
        again = tt.compile(GeluMLP().half(), [x], emit_ptx=True, cache_dir=tmp_path).report
        assert not again.pieces[0].cached and again.pieces[0].compile_seconds is not None
        assert is_whole_entry(pickle.loads(path.read_bytes())[1])


def test_a_failed_compile_is_the_reason_explain_gives(tmp_path, monkeypatch):
    """Where the pieces cannot run here, explain still compiles them to PTX: a compile that
    fails is what it reports (and strict raises), not the device."""
    from tilesync.contract import CompileError
    from tilesync.frontend.torch import compiler

    def failing(*args, **kwargs):
        raise CompileError("sync-verify: tile (1, 0) outside the grid")

    monkeypatch.setattr(compiler, "cached_entry", failing)
    x = torch.randn(16, 128, dtype=torch.half)
    text = tt.explain(GeluMLP().half(), x, cache_dir=tmp_path)
    assert "compile: sync-verify: tile (1, 0) outside the grid" in text
    assert "inputs on cpu" not in text
    with pytest.raises(UnsupportedError, match=r"compile: sync-verify: tile \(1, 0\)"):
        tt.compile(GeluMLP().half(), [x], emit_ptx=True, strict=True, cache_dir=tmp_path)


@pytest.mark.parametrize("make", [lambda: GeluMLP(), lambda: LlamaMLP(128, 256)])
def test_replaced_pieces_train_with_torchs_gradients(make, tmp_path):
    model = make().to(torch.bfloat16).train()
    x = torch.randn(16, 128, dtype=torch.bfloat16, requires_grad=True)
    compiled = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert "torch.ops.tilesync.piece.default" in compiled.graph_module.code
    weights = [p for p in model.parameters()]
    out = compiled(x)
    assert out.requires_grad
    seed = torch.randn_like(out)
    ours = torch.autograd.grad(out, [x, *weights], seed)
    theirs = torch.autograd.grad(model(x), [x, *weights], seed)
    for mine, eager in zip(ours, theirs, strict=True):
        assert mine is not None and torch.equal(mine, eager)


def test_the_piece_op_runs_on_fake_tensors_without_its_runner():
    """Tracing a compiled module again (make_fx, AOT autograd) runs the op on fake tensors:
    its Meta kernel gives the piece's result shapes and dtype; the runner (kernels on a GPU)
    never sees a fake tensor."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from tilesync.frontend.torch import ops

    class Runner:
        out_shapes, dtype = [(16, 96)], torch.bfloat16

        def __call__(self, inputs):
            raise AssertionError("the runner ran on fake tensors")

    piece = ops.register(Runner(), [])
    with FakeTensorMode() as mode:
        (out,) = ops.piece_op()([mode.from_tensor(torch.randn(16, 128))], piece)
    assert out.shape == (16, 96) and out.dtype == torch.bfloat16


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_trace_match_and_reach_ptx(name, tmp_path):
    model, inputs = example(name)
    compiled = tt.compile(model, inputs, emit_ptx=True, cache_dir=tmp_path)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), model(*inputs))
    pieces = compiled.report.pieces
    expected = {"llama_mlp": ["SwiGLU MLP"], "llama65b_mlp_tp8": ["SwiGLU MLP"],
                "gpt2_block": ["Attention", "Linear→GeLU→Linear"],
                "gpt2_attention": ["Attention"], "gpt2_sdpa_attention": ["Attention"],
                "hf_gpt2_block": ["Attention", "Linear→GeLU→Linear"],  # Conv1D projections
                "hf_gpt2_attention": ["Attention"],
                "gpt2_decode": ["Attention"],  # after a KV cache: the fused program
                "nerf_mlp": ["MLP stack"], "nerf_mlp_rays": ["MLP stack"],
                "resnet_block": ["Conv→ReLU→Conv"],  # eval mode: BN folds into the convs
                "edge_mlp": ["MLP stack"]}[name]
    assert [p.description.split(" [")[0] for p in pieces] == expected
    for piece in pieces:  # lowered and compiled to PTX on the CPU; stays with torch here
        assert piece.compile_seconds is not None and "inputs on cpu" in piece.reason


@pytest.mark.parametrize(("rows", "gate_up"), [
    (32, "#graph.bind<gate_up 1, 2>"),  # the wgmma GEMMs: plain buffers
    (64, "#graph.bind<gate_up 1, 2 as !tile.tensor_map<64x64xf16, swizzle 128>>"),  # TMA
])
def test_compiled_entry_has_ptx_and_bindings(rows, gate_up):
    model = LlamaMLP(128, 256).half()
    (piece,) = _pieces(model, [torch.randn(rows, 128, dtype=torch.half)])
    entry = compile_entry((str(graph_function(piece)), STAGES_PASS))
    assert {"gemm1_module", "gemm2_module"} <= set(entry["ptx_by_module"])
    assert "wgmma.mma_async" in entry["ptx_by_module"]["gemm1_module"]
    assert ".target sm_90a" in entry["ptx_by_module"]["gemm2_module"]
    assert "tilesync_next_epoch" in entry["kernels"]  # the epoch lives on the device
    assert gate_up in entry["host"] and "pdl = true" in entry["host"]
    assert entry["temps"] == [(rows, 256)]


def test_an_mlp_on_the_tma_gemms_also_compiles_persistent():
    """Where it runs on a GPU, an MLP on the TMA GEMMs (64 rows and more) is compiled to both
    MLP_FORMS, and the faster measured runs: the second has the GEMMs as persistent grids in
    stream order, without the cuSync passes (no dependency, no epoch kernel, no PDL)."""
    from tilesync.frontend.torch import compiler
    from tilesync.kernels.mlp import persistent_spec

    model = LlamaMLP(128, 256).half()
    for rows, forms in ((32, (compiler.STAGES_PASS,)), (64, compiler.MLP_FORMS)):
        (piece,) = _pieces(model, [torch.randn(rows, 128, dtype=torch.half)])
        assert compiler.mlp_forms(compiler.plan(graph_function(piece))) == forms
    entry = compile_entry((str(graph_function(piece)), compiler.MLP_FORMS[1]))
    assert "sync.dependency" not in entry["host"] and "pdl" not in entry["host"]
    assert "tilesync_next_epoch" not in entry["kernels"]
    assert entry["kernels"]["gemm1"].user_params == ("tmap",) * 3
    # each GEMM's persistent grid: a block a tile here, fewer tiles than SMs
    spec = persistent_spec(compiler.plan(graph_function(piece)))
    for cfg in (spec.cfg1, spec.cfg2):
        assert cfg.grid[0] == math.prod(cfg.tile_grid) < 132
        assert f"grid = array<i64: {cfg.grid[0]}, 1>" in entry["host"]
    assert entry["temps"] == [(64, 256)]


def test_second_compile_comes_from_the_disk_cache(tmp_path, monkeypatch):
    """The second compile reads the entry back and compiles nothing (how long that takes is
    measured by `tilesync bench torch`, not asserted here)."""
    from tilesync.frontend.torch import compiler

    model = GeluMLP().half()
    x = torch.randn(16, 128, dtype=torch.half)
    first = tt.compile(model, [x], emit_ptx=True, cache_dir=tmp_path).report.pieces[0]
    monkeypatch.setattr(compiler, "compile_entry",
                        lambda *args: pytest.fail("a cached piece was compiled again"))
    second = tt.compile(model, [x], emit_ptx=True, cache_dir=tmp_path).report.pieces[0]
    assert not first.cached and second.cached
    assert list((tmp_path / "torch").glob("*.pkl"))


@pytest.mark.parametrize("ours_ms, loaded", [(2.0, []), (0.5, ["persistent"])])
def test_a_cached_decision_loads_only_the_kernels_it_runs(ours_ms, loaded, tmp_path,
                                                          monkeypatch):
    """In auto mode the first compile loads and times every form of a piece, then ours
    against torch; a second finds both measurements cached and loads the fastest form only
    where ours won, none where torch did (the kernels are not loaded: a cached compile's
    time). The device is stubbed: the forms are two fake entries."""
    from tilesync.frontend.torch import compiler

    forms = ("stages", "persistent")
    built, timed = [], []

    def runner(piece, entry, cubin_dir=None):
        built.append(entry["form"])
        return lambda inputs: pytest.fail("a stubbed runner ran")

    monkeypatch.setattr(compiler, "device_status", lambda infos: None)
    monkeypatch.setattr(compiler, "_device_name", lambda status: "stub GPU")
    monkeypatch.setattr(compiler, "stage_forms", lambda spec, module: forms)
    monkeypatch.setattr(compiler, "cached_entry", lambda text, options, stack, forms:
                        ([{"form": form} for form in forms], True))
    monkeypatch.setattr(compiler, "stage_runner", runner)
    monkeypatch.setattr(compiler.cost, "measure_graph_ms",
                        lambda fn: timed.append("form") or (1.2 if len(timed) == 1 else 1.1))
    monkeypatch.setattr(compiler, "measure", lambda piece, runner, example:
                        timed.append("piece") or (ours_ms, 1.0))
    monkeypatch.setattr(compiler, "rewrite", lambda gm, piece, runner, replaced=None: None)
    model = LlamaMLP(128, 256).half()
    x = torch.randn(16, 128, dtype=torch.half)
    options = compiler.Options.make(mode="auto", cache_dir=tmp_path)

    def piece_report():  # the piece's decision (the graph-level choice runs CUDA graphs)
        return compiler.transform(torch.fx.symbolic_trace(model), [x], options)[1].pieces[0]

    first = piece_report()
    assert sorted(built) == sorted(forms) and timed == ["form", "form", "piece"]
    built.clear()
    timed.clear()
    second = piece_report()
    assert built == loaded and timed == []
    assert second.choice == first.choice == ("tilesync" if loaded else "torch")
    assert second.measured == first.measured and second.variants == first.variants


def test_log_and_explain_print_each_piece(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TILESYNC_LOG", "1")
    tt.compile(GeluMLP().half(), [torch.randn(16, 128, dtype=torch.half)], cache_dir=tmp_path)
    err = capsys.readouterr().err
    assert "tilesync: piece 0: Linear→GeLU→Linear [16 rows, 128 -> 512 -> 128, float16]: " \
           "torch (inputs on cpu" in err and "predicted ours" in err
    text = tt.explain(LlamaMLP(128, 256).half(), torch.randn(4, 128, dtype=torch.half),
                      cache_dir=tmp_path)
    assert "SwiGLU MLP" in text and "compiled in" in text
    assert re.search(r"run as stage programs \(in \d+\.\d\d s\)", text)  # the whole transform


def test_backend_entry_point_and_dynamo_graphs(tmp_path, monkeypatch):
    from importlib.metadata import entry_points

    from tilesync.frontend.torch.backend import LAST_REPORTS

    names = {e.name: e.value for e in entry_points(group="torch_dynamo_backends")}
    assert names.get("tilesync") == "tilesync.frontend.torch.backend:tilesync_backend"
    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    model = LlamaMLP(128, 256).half()
    x = torch.randn(2, 8, 128, dtype=torch.half)
    torch._dynamo.reset()
    out = torch.compile(model, backend="tilesync")(x)
    assert torch.equal(out, model(x))
    assert LAST_REPORTS[-1].pieces[0].description.startswith("SwiGLU MLP [16 rows")


def test_progress_bar_only_after_a_second():
    quiet = io.StringIO()
    with Progress("compiling", 2, delay=1.0, stream=quiet) as bar:
        bar.advance()
    assert quiet.getvalue() == ""
    loud = io.StringIO()
    with Progress("compiling", 2, delay=0.05, stream=loud) as bar:
        time.sleep(0.2)
        bar.advance(2)
    assert "tilesync: compiling [" in loud.getvalue() and "2/2" in loud.getvalue()


def test_examples_on_other_row_counts_for_the_bench_sweep():
    from tilesync.tools.cli import build_parser

    _, inputs = example("llama_mlp", rows=16)
    assert [tuple(t.shape) for t in inputs] == [(16, 1024)]
    _, inputs = example("nerf_mlp_rays", rows=128)
    assert [tuple(t.shape) for t in inputs] == [(128, 63), (128, 27)]
    with pytest.raises(ValueError, match="takes images"):
        example("resnet_block", rows=16)
    model, inputs = example("gpt2_attention", rows=128)  # one sequence of 128 tokens
    assert [tuple(t.shape) for t in inputs] == [(1, 128, 768)]
    with torch.no_grad():
        assert model(*inputs).shape == (1, 128, 768)
    with pytest.raises(ValueError, match="no example model 'llama'; the examples: llama_mlp"):
        example("llama")
    args = build_parser().parse_args(["bench", "torch", "--models", "llama_mlp", "--rows", "16",
                                      "4096"])
    assert args.rows == [16, 4096] and args.models == ["llama_mlp"]


def test_a_piece_is_ours_where_it_wins_called_or_replayed():
    """A launch-bound piece (GPT-2's attention on an H200: ours 0.43 ms called, 5 launches
    from Python, against torch's 0.38; its device time well below torch's) is ours where it
    wins replayed from a CUDA graph too: graph_choice then measures the graph's forms with it
    against torch's own, so a form slower when called is not the one chosen."""
    from tilesync.frontend.torch.compiler import PieceReport, _ours_wins

    assert not _ours_wins((0.43, 0.38))
    assert _ours_wins((0.43, 0.38, 0.02, 0.035))
    assert _ours_wins((0.30, 0.38, 0.05, 0.035))
    assert not _ours_wins((0.43, 0.38, 0.0345, 0.035))  # within WIN_MARGIN: torch's
    entry = PieceReport(0, "Attention", measured=(0.43, 0.38, 0.02, 0.035))
    assert entry.line().endswith("measured ours 0.4300 ms vs torch 0.3800 ms; replayed from "
                                 "a CUDA graph ours 0.0200 ms vs torch 0.0350 ms")


def _infos(gm):
    return {n.name: n.meta["tilesync_info"] for n in gm.graph.nodes if "tilesync_info" in n.meta}


def test_recorded_shapes_come_from_the_cache_without_a_run(tmp_path, monkeypatch):
    """A graph whose shapes are cached is not run again: the same TensorInfos, the placeholders
    copies of the examples, the get_attr nodes the attributes they read."""
    from tilesync.frontend.torch.compiler import record_values
    from tilesync.harness.compile_cache import CompileCache

    cache = CompileCache(tmp_path, "torch-shapes", sources="test")
    model = LlamaMLP(64, 128)
    x = torch.randn(3, 64)
    gm = torch.fx.symbolic_trace(model)
    first = record_values(gm, [x], cache)
    expected = _infos(gm)
    assert expected["down_proj"].shape == (3, 64) and cache.misses == 1

    def no_run(*args, **kwargs):
        raise AssertionError("a cached graph was run")

    monkeypatch.setattr(torch.fx.Interpreter, "run", no_run)
    again = torch.fx.symbolic_trace(model)
    kept = record_values(again, [x], cache)
    assert cache.hits == 1 and _infos(again) == expected
    assert kept.keys() == first.keys()
    assert torch.equal(kept["x"], x) and kept["x"] is not x  # a copy, as the run made

    monkeypatch.undo()  # another shape is another key: run and recorded
    other = torch.fx.symbolic_trace(model)
    record_values(other, [torch.randn(5, 64)], cache)
    assert _infos(other)["down_proj"].shape == (5, 64) and cache.misses == 2


class Masked(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.relu(x[x > 0])


class Nonzero(torch.nn.Module):
    def forward(self, x):
        return x.nonzero() + 1


@pytest.mark.parametrize("model, shapes", [(Masked(), [(1,), (3,)]),
                                           (Nonzero(), [(2, 1), (3, 1)])],
                         ids=["mask", "nonzero"])
def test_shapes_that_follow_from_values_are_never_cached(model, shapes, tmp_path):
    """Indexing by a tensor, nonzero: another input of the same shape gives another result
    shape, so the graph is run every time (no key, nothing stored) and records each one."""
    from tilesync.frontend.torch.compiler import record_values, shape_key
    from tilesync.harness.compile_cache import CompileCache

    cache = CompileCache(tmp_path, "torch-shapes", sources="test")
    assert shape_key(torch.fx.symbolic_trace(model), [torch.randn(3)]) is None
    for x, expected in zip([torch.tensor([1.0, -1.0, 0.0]), torch.tensor([1.0, 2.0, 3.0])],
                           shapes, strict=True):
        gm = torch.fx.symbolic_trace(model)
        record_values(gm, [x], cache)
        (result,) = next(n for n in gm.graph.nodes if n.op == "output").args
        assert result.meta["tilesync_info"].shape == expected
    assert cache.hits == 0 and not list(tmp_path.rglob("*.pkl"))


def test_a_decoding_step_compiles_to_the_fused_program_with_split_keys():
    """nanoGPT's attention after a KV cache (torch.cat of the cached keys and values before
    the new tokens'): one piece whose graph function concatenates the caches (inputs), planned
    and compiled as the fused program only; the keys split over blocks, merged by a combine
    stage, whose fp32 partials the runner allocates as such."""
    from tilesync.examples.torch_models import DecodeAttention
    from tilesync.frontend.torch import compiler
    from tilesync.transforms.graph.graph_to_stages import FusedAttentionSpec

    model = DecodeAttention(256, 2).half()
    inputs = [torch.randn(3, 1, 256, dtype=torch.half),
              *(torch.randn(3, 2, 512, 128, dtype=torch.half) for _ in "kv")]
    (piece,) = _pieces(model, inputs)
    text = str(graph_function(piece))
    assert text.count("graph.concat") == 2 and "dim -2" in text
    module = graph_function(piece, names=False)
    spec = compiler.plan(module)
    assert isinstance(spec, FusedAttentionSpec) and spec.attention.cached == 512
    forms = compiler.stage_forms(spec, module)
    assert forms == compiler.ATTENTION_FORMS[1:]  # the chain cannot read a cache
    entry = compile_entry((text, forms[0]))
    assert "sync.stage @combine" in entry["host"]
    assert entry["fp32_temps"] == [False, False, True, True]
    # the caches are the piece's last two inputs (after x and the projections' parameters)
    assert [getattr(ref, "name", ref) for ref in piece.inputs[-2:]] == ["k_cache", "v_cache"]
    assert "#graph.bind<input 5>, #graph.bind<input 6>, #graph.bind<temp 3>]" in entry["host"]
