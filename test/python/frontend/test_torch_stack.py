"""NeRF-style MLP stacks in the torch front end without a GPU: the fx walk, the stack at the
kernels' widths (its graph function evaluated here on the adapters' arguments gives torch's
values), graph-to-dataflow's plan of it, the rewrite into the custom op with two outputs, the
Dynamo path, and PTX. Skipped where torch is not installed."""

from __future__ import annotations

import pickle

import pytest

torch = pytest.importorskip("torch")

from xdsl.dialects import func  # noqa: E402

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.dialects import graph  # noqa: E402
from tilesync.examples.torch_models import EdgeMLP, NeRFMLP, example  # noqa: E402
from tilesync.frontend.torch.compiler import plan, record_values  # noqa: E402
from tilesync.frontend.torch.patterns import find_pieces, graph_function  # noqa: E402
from tilesync.frontend.torch.stack import PATTERN, Adapter  # noqa: E402

F = torch.nn.functional


def _pieces(model, inputs):
    gm = torch.fx.symbolic_trace(model)
    record_values(gm, inputs)
    return gm, find_pieces(gm)


def _evaluate(module, args):
    """The graph function of `module` on torch tensors (linear, relu, concat: a stack's ops)."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    values = dict(zip(fn.body.block.args, args, strict=True))
    for op in fn.body.block.ops:
        if isinstance(op, graph.LinearOp):
            values[op.result] = F.linear(values[op.input], values[op.weight], values[op.bias])
        elif isinstance(op, graph.ReluOp):
            values[op.results[0]] = F.relu(values[op.operands[0]])
        elif isinstance(op, graph.ConcatOp):
            values[op.result] = torch.cat([values[v] for v in op.inputs], dim=-1)
        elif isinstance(op, graph.LayerNormOp):
            x = values[op.input]
            values[op.result] = F.layer_norm(x, x.shape[-1:], values[op.weight],
                                             values[op.bias], op.eps.value.data)
        elif isinstance(op, func.ReturnOp):
            return [values[v] for v in op.arguments]
        else:
            raise AssertionError(op.name)


def _as_written(model, *inputs):
    """The stack computed by its graph function at the kernels' widths, from torch's tensors
    through the adapters, each result cut back: what the pipeline computes."""
    gm = torch.fx.symbolic_trace(model)
    record_values(gm, list(inputs))
    (piece,) = [p for p in find_pieces(gm) if p.pattern == PATTERN]
    names = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = []
    for ref in piece.inputs:
        if isinstance(ref, str):
            values.append(gm.get_parameter(ref))
        else:
            values.append(inputs[names.index(ref)])
    module = graph_function(piece)
    form = piece.stack
    args = [a.apply(values, values[0]) for a in form.adapters]
    outs = _evaluate(module, args)
    return piece, [o[:, :w].reshape(*form.lead, w) for o, w in zip(outs, form.out_widths,
                                                                      strict=True)]


def test_nerf_is_one_stack_with_its_skip_side_input_and_dot_head():
    model, inputs = example("nerf_mlp")
    _, pieces = _pieces(model, inputs)
    (piece,) = pieces
    assert piece.pattern == PATTERN
    assert piece.description == (
        "MLP stack [4096 rows, 64 -> 256 -> 256 -> 256 -> 256 -> 256 -> 256 -> 256 -> 256 -> "
        "256 -> 128 -> 3, float16; skip at 4, side input at 9, dot head at 8]")
    # the density (sigma) and the colour's last linear are its two outputs
    assert [n.name for n in piece.outputs] == ["rgb", "sigma"]
    assert piece.more_infos[0].shape == (4096, 1)
    text = str(graph_function(piece))
    assert text.count("graph.linear") == 12 and text.count("graph.relu") == 9
    assert text.count("graph.concat") == 2
    # the colour's 3 outputs padded to 16; cat([feature, direction]) read direction first
    assert "-> (tensor<4096x16xf16>, tensor<4096x1xf16>)" in text
    stack = plan(graph_function(piece), stack=True)
    assert stack.skips == (4,) and stack.side_inputs == ((9, 64),) and stack.dot_head == 8
    assert stack.plain_layers == (8, 10) and stack.fused == (1, 10)  # light layers fused


@pytest.mark.parametrize("skip", [4, 5])
def test_the_padded_stack_computes_what_torch_does(skip):
    """NeRF as written (63- and 27-wide inputs, 3 colours, cat([feature, direction]) with h
    first): the adapters pad and reorder, and the padded function gives torch's values."""
    torch.manual_seed(0)
    model = NeRFMLP(in_xyz=63, in_dir=27, skip=skip)
    xyz, direction = torch.randn(128, 63), torch.randn(128, 27)
    piece, (rgb_logits, sigma) = _as_written(model, xyz, direction)
    form = piece.stack
    assert form.widths[0] == 64 and form.widths[-1] == 16 and form.torch_widths[-1] == 3
    h = xyz
    for i, layer in enumerate(model.layers):
        if i == model.skip:
            h = torch.cat([xyz, h], -1)
        h = F.relu(layer(h))
    torch.testing.assert_close(sigma, model.sigma(h))
    hidden = F.relu(model.rgb_hidden(torch.cat([model.feature(h), direction], -1)))
    torch.testing.assert_close(rgb_logits, model.rgb(hidden))
    ref = model(xyz, direction)
    torch.testing.assert_close(torch.cat([torch.sigmoid(rgb_logits), sigma], -1), ref)


def test_weight_adapter_moves_a_concatenations_columns_to_the_kernels_order():
    w = torch.arange(2 * 5, dtype=torch.float32).reshape(2, 5)  # cat([h (3), a (2)])
    adapter = Adapter("weight", 0, rows=16, cols=128, blocks=((3, 0, 2), (0, 64, 3)))
    out = adapter.apply([w], w)
    assert out.shape == (16, 128) and out[2:].abs().sum() == 0
    assert torch.equal(out[:2, :2], w[:, 3:]) and torch.equal(out[:2, 64:67], w[:, :3])
    assert out[:2, 2:64].abs().sum() == 0 and out[:2, 67:].abs().sum() == 0
    bias = Adapter("bias", None, rows=16).apply([w], w)
    assert bias.shape == (16,) and bias.abs().sum() == 0


class Chain(torch.nn.Module):
    def __init__(self, act=None, layers=3, bias=True, width=64):
        super().__init__()
        self.fcs = torch.nn.ModuleList(torch.nn.Linear(width, width, bias=bias)
                                       for _ in range(layers))
        self.act = act

    def forward(self, x):
        for fc in self.fcs:
            x = fc(x)
            if self.act is not None and fc is not self.fcs[-1]:
                x = self.act(x)
        return x


@pytest.mark.parametrize("act, layers, pattern", [
    (torch.relu, 2, PATTERN),  # Linear→ReLU→Linear: graph-to-stages has no ReLU epilogue
    (None, 3, PATTERN),  # three plain layers
    (None, 2, "Linear→Linear"),  # the pair pattern keeps what graph-to-stages takes
    (F.gelu, 3, "Linear→GeLU→Linear"),  # a GeLU ends a stack: no stack of one layer
])
def test_which_chains_are_stacks(act, layers, pattern):
    _, pieces = _pieces(Chain(act, layers).half(), [torch.randn(128, 64).half()])
    assert pieces and pieces[-1].pattern == pattern


def test_a_layer_read_outside_ends_the_stack_there():
    class Tapped(Chain):
        def forward(self, x):
            a = torch.relu(self.fcs[0](x))
            b = torch.relu(self.fcs[1](a))
            return self.fcs[2](b), a.sum()

    _, pieces = _pieces(Tapped(), [torch.randn(64, 64)])
    # from fcs 0 the walk stops at a (read by the sum): one layer, no stack; from fcs 1 on,
    # a is the stack's input
    (piece,) = pieces
    assert piece.pattern == PATTERN and piece.inputs[0].name == "relu"
    assert [n.name for n in piece.nodes] == ["fcs_1", "relu_1", "fcs_2"]


def test_meshgraphnets_edge_mlp_is_a_stack_ending_in_its_layer_norm():
    """MeshGraphNets' edge MLP (Linear+ReLU, Linear+ReLU, Linear, LayerNorm): one stack whose
    layer norm is graph-to-dataflow's SIMT stage; the padded function gives torch's values."""
    model, inputs = example("edge_mlp")
    _, (piece,) = _pieces(model, inputs)
    assert piece.description == ("MLP stack [65536 rows, 384 -> 128 -> 128 -> 128, float16; "
                                 "layer norm]")
    assert piece.outputs[0].target == "mlp.5"  # nn.LayerNorm, the Sequential's last
    stack = plan(graph_function(piece), stack=True)
    assert stack.layer_norm and stack.plain_layers == (2,) and stack.fused == (2,)
    torch.manual_seed(0)
    small = EdgeMLP(64)
    small.mlp[-1].weight.data.uniform_(0.5, 1.5)  # not the identity affine
    small.mlp[-1].bias.data.uniform_(-1, 1)
    parts = [torch.randn(128, 64) for _ in range(3)]
    x = torch.cat(parts, -1)

    class Stack(torch.nn.Module):  # the MLP on its concatenated input, the stack's x
        def __init__(self):
            super().__init__()
            self.mlp = small.mlp

        def forward(self, x):
            return self.mlp(x)

    _, (out,) = _as_written(Stack(), x)
    torch.testing.assert_close(out, small(*parts))


@pytest.mark.parametrize("latent, normalized", [(120, (120,)), (128, (64, 128))])
def test_a_layer_norm_the_kernels_cannot_take_stays_with_torch(latent, normalized):
    """Over padded columns (120 padded to 128) a layer norm's mean and variance would not be
    torch's; over the rows as well (64 x 128) it is another op: the stack ends before it."""
    class Normed(Chain):
        def __init__(self):
            super().__init__(torch.relu, 3, width=latent)
            self.norm = torch.nn.LayerNorm(normalized)

        def forward(self, x):
            return self.norm(super().forward(x))

    model = Normed()
    gm, (piece,) = _pieces(model, [torch.randn(64, latent)])
    assert piece.pattern == PATTERN and not piece.description.endswith("layer norm]")
    assert [n.target for n in piece.nodes][-1] == "fcs.2"  # the norm is torch's
    assert any(n.target == "norm" for n in gm.graph.nodes)


def test_stack_without_biases_gets_zero_biases():
    model = Chain(torch.relu, 3, bias=False)
    x = torch.randn(64, 64)
    piece, (out,) = _as_written(model, x)
    assert [a.source for a in piece.stack.adapters if a.kind == "bias"] == [None] * 3
    torch.testing.assert_close(out, model(x))


def test_forced_stack_runs_as_one_op_with_two_outputs(tmp_path):
    model, inputs = example("nerf_mlp")
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path)
    code = compiled.graph_module.code
    assert code.count("torch.ops.tilesync.piece.default") == 1 and "relu" not in code
    assert "getitem" in code and "sigmoid" in code  # torch keeps what follows the stack
    with torch.no_grad():  # no GPU: the op computes with torch, the same ops
        assert torch.equal(compiled(*inputs), model(*inputs))
    (report,) = compiled.report.pieces
    assert report.choice == "tilesync" and report.predicted is not None


def test_a_dot_head_read_before_the_last_layer_puts_the_call_there(tmp_path):
    class EarlyDensity(NeRFMLP):
        def forward(self, xyz, direction):
            h = xyz
            for i, layer in enumerate(self.layers):
                if i == self.skip:
                    h = torch.cat([xyz, h], dim=-1)
                h = F.relu(layer(h))
            sigma = torch.exp(self.sigma(h))  # read before the heads run
            h = F.relu(self.rgb_hidden(torch.cat([self.feature(h), direction], dim=-1)))
            return self.rgb(h), sigma

    model = EarlyDensity(depth=4, width=64, in_xyz=64, in_dir=64, skip=2).half()
    inputs = [torch.randn(256, 64).half(), torch.randn(256, 64).half()]
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path)
    assert [p.description.split(" [")[0] for p in compiled.report.pieces] == [PATTERN]
    with torch.no_grad():
        for got, ref in zip(compiled(*inputs), model(*inputs), strict=True):
            assert torch.equal(got, ref)


def test_a_side_input_computed_after_a_reader_of_the_density_ends_the_stack_before_it(
        tmp_path):
    class LateDirection(NeRFMLP):
        def forward(self, xyz, direction):
            h = xyz
            for layer in self.layers:
                h = F.relu(layer(h))
            sigma = torch.exp(self.sigma(h))
            late = direction * 2  # computed after sigma is read
            h = F.relu(self.rgb_hidden(torch.cat([self.feature(h), late], dim=-1)))
            return self.rgb(h), sigma

    model = LateDirection(depth=3, width=64, in_xyz=64, in_dir=64, skip=9)
    inputs = [torch.randn(64, 64), torch.randn(64, 64)]
    _, pieces = _pieces(model, inputs)
    # the trunk is a stack without the dot head (whose reader comes before `late`); the heads
    # from the feature layer on are another
    assert [p.description for p in pieces] == [
        "MLP stack [64 rows, 64 -> 64 -> 64 -> 64, float32]",
        "MLP stack [64 rows, 64 -> 64 -> 32 -> 3, float32; side input at 1]"]
    assert not any(p.more_outputs for p in pieces)
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path)
    with torch.no_grad():
        for got, ref in zip(compiled(*inputs), model(*inputs), strict=True):
            torch.testing.assert_close(got, ref)


def test_stack_through_dynamo(tmp_path, monkeypatch):
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    monkeypatch.setenv("TILESYNC_MODE", "tilesync")
    model, inputs = example("nerf_mlp")
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(model, backend=tilesync_backend)(*inputs)
        assert torch.equal(out, model(*inputs))
    assert LAST_REPORTS[-1].pieces[0].description.startswith("MLP stack [4096 rows, 64 -> 256")


def test_edge_mlp_through_dynamo_keeps_its_layer_norm_in_the_stack(tmp_path, monkeypatch):
    """Dynamo inlines nn.LayerNorm as F.layer_norm on the parameters: the same stack."""
    from tilesync.frontend.torch.backend import LAST_REPORTS, tilesync_backend

    monkeypatch.setenv("TILESYNC_CACHE", str(tmp_path))
    monkeypatch.setenv("TILESYNC_MODE", "tilesync")
    model, inputs = example("edge_mlp", rows=1024)
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(model, backend=tilesync_backend)(*inputs)
        assert torch.equal(out, model(*inputs))
    assert LAST_REPORTS[-1].pieces[0].description == (
        "MLP stack [1024 rows, 384 -> 128 -> 128 -> 128, float16; layer norm]")


def test_small_stack_reaches_one_persistent_kernel_ptx(tmp_path):
    from tilesync.frontend.torch.compiler import STACK_PASSES, compile_stack_entry

    model = Chain(torch.relu, 3).half()
    _, (piece,) = _pieces(model, [torch.randn(1024, 64).half()])
    entry = pickle.loads(pickle.dumps(compile_stack_entry((str(graph_function(piece)),
                                                           STACK_PASSES[0], str(tmp_path)))))
    assert entry["results"] == [(1024, 64)]
    plan = entry["plan"]  # what DataflowProgram runs, without the IR
    assert plan.persistent == "mlp_persistent" and plan.persistent in entry["kernels"]
    assert [s.name for s in plan.stages] == list(entry["binds"]) and len(plan.queues) >= 1
    # the first stage reads the input (argument 0), the last writes result 0
    assert entry["binds"][plan.stages[0].name][0] == ("input", (0,))
    assert entry["binds"][plan.stages[-1].name][-1] == ("result", (0,))
    (ptx,) = entry["ptx_by_module"].values()
    assert ".target sm_90a" in ptx and "wgmma.mma_async" in ptx


def test_torchs_predicted_time_counts_the_layer_norms_pass():
    """The cost model's torch side: the stack's GEMMs and elementwise passes, and a layer norm
    one more launch reading and writing the last layer's rows."""
    from tilesync.frontend.torch import cost
    from tilesync.kernels.mlp_pipeline import fitting_stack

    shape = dict(plain_layers=(2,))
    plain = fitting_stack(1 << 16, (384, 128, 128, 128), **shape)
    normed = fitting_stack(1 << 16, (384, 128, 128, 128), layer_norm=True, **shape)
    rates = cost.H100
    extra = 2 * 2 * (1 << 16) * 128 / rates.bandwidth + cost.LAUNCH_S
    assert cost.predict_stack(normed, rates).torch_ms == pytest.approx(
        cost.predict_stack(plain, rates).torch_ms + extra * 1e3)


def test_a_stack_compiles_the_ilp_allotment_unless_tuned(tmp_path, monkeypatch):
    """One pipeline by default (a first compile takes one pipeline's time), every allotment of
    STACK_PASSES with `tune` or TILESYNC_TUNE=1; an entry compiled either way is the cache's."""
    from tilesync.frontend.torch import compiler

    jobs = []

    def fake_compile(job, target):  # a whole entry (is_whole_entry), or the cache skips it
        jobs.append(job[1])
        return {"pass": job[1], "target": target, "ptx_by_module": {"module": "ptx"},
                "kernels": {}, "plan": None, "binds": {}, "results": []}

    monkeypatch.setattr(compiler, "compile_stack_entry", fake_compile)
    monkeypatch.delenv("TILESYNC_TUNE", raising=False)
    options = compiler.Options.make(cache_dir=tmp_path)
    assert not options.tune and compiler.stack_passes(options) == compiler.STACK_PASSES[:1]
    entries, cached = compiler.cached_entry("graph text", options, True,
                                            compiler.stack_passes(options))
    assert jobs == [compiler.STACK_PASSES[0]] and not cached
    assert [e["pass"] for e in entries] == jobs
    monkeypatch.setenv("TILESYNC_TUNE", "1")
    tuned = compiler.Options.make(cache_dir=tmp_path)
    assert tuned.tune and compiler.stack_passes(tuned) == compiler.STACK_PASSES
    entries, cached = compiler.cached_entry("graph text", tuned, True,
                                            compiler.stack_passes(tuned))
    # the ILP's allotment from the cache, the even one compiled (here: one worker at a time)
    assert jobs == list(compiler.STACK_PASSES) and not cached
    assert [e["pass"] for e in entries] == list(compiler.STACK_PASSES)
    assert compiler.cached_entry("graph text", tuned, True, compiler.stack_passes(tuned))[1]
    assert not compiler.Options.make(cache_dir=tmp_path, tune=False).tune


def test_a_pipeline_runner_moves_from_the_fast_tier_to_the_full_kernels(monkeypatch, tmp_path):
    """Without the full cubins cached the runner loads the fast tier and compiles the full one
    on a thread; it moves at a call after that lands (or when told to wait, or at once where
    a stream capture records the call: then in relaxed capture mode, for the module load),
    loading them into the same program (its rings: launches in flight and graphs captured on
    the fast ones still run); a measurement made while one runs the fast tier is cached only
    where ours won; with them cached, no tier."""
    import contextlib
    import threading
    from types import SimpleNamespace

    from tilesync.frontend.torch import compiler, finish_compiles
    from tilesync.frontend.torch.ops import PipelineRunner, kernel_moves, on_the_fast_tier
    from tilesync.runtime import dataflow as pipelines
    from tilesync.runtime import module as modules
    from tilesync.runtime import stream as streams

    loaded = []

    class Program:
        def __init__(self, compiled, plan=None, cubin_dir=None, fast=None):
            loaded.append(fast)

        def load_kernels(self, fast, cubin_dir=None):
            loaded.append(fast)

    cached = {"full": False}
    landed = threading.Event()

    def compile_in_full(ptx_by_module, target, cubin_dir):
        landed.wait(10)
        cached["full"] = True
        return True

    monkeypatch.setattr(pipelines, "TIERED_PIPELINES", True)
    monkeypatch.setattr(pipelines, "DataflowProgram", Program)
    monkeypatch.setattr(pipelines, "compile_in_full", compile_in_full)
    monkeypatch.setattr(pipelines, "compiled_in_full", lambda *args: cached["full"])
    monkeypatch.setattr(modules, "disk_cache_enabled", lambda: True)
    relaxed = []

    @contextlib.contextmanager
    def relaxed_capture_mode():
        relaxed.append("in")
        yield
        relaxed.append("out")

    monkeypatch.setattr(streams, "relaxed_capture_mode", relaxed_capture_mode)
    entry = {"ptx_by_module": {"m": "ptx"}, "kernels": {}, "plan": None, "target": "sm_90a",
             "binds": {}, "results": []}
    form = SimpleNamespace(lead=(), out_widths=[])
    runner = PipelineRunner(entry, form, None)
    assert loaded == [True] and not runner.full and not runner.upgrade()
    landed.set()
    assert runner.upgrade(wait=True) and loaded == [True, False] and runner.full
    assert not relaxed
    assert PipelineRunner(entry, form, None).full and loaded[-1] is False
    cached["full"] = False
    landed.clear()
    captured = PipelineRunner(entry, form, None)
    assert not captured.full and loaded[-1] is True
    threading.Timer(0.2, landed.set).start()
    assert captured.upgrade(capturing=True) and loaded[-1] is False and relaxed == ["in", "out"]
    cached["full"] = False
    landed.clear()
    timed = PipelineRunner(entry, form, None)  # a benchmark waits for every full compile
    threading.Timer(0.2, landed.set).start()
    finish_compiles()
    assert timed.full and loaded[-1] is False
    cached["full"] = False
    landed.clear()
    # measured on the fast tier: cached only where ours won; a replay's kernel_moves()
    # moves the runner
    measured = PipelineRunner(entry, form, None)
    assert on_the_fast_tier()
    options = compiler.Options.make(cache_dir=tmp_path)
    assert compiler._tuned("key", options, lambda: 1.0) == (1.0, False)
    assert compiler._lookup("key", options) == (False, None)
    ours_won = lambda value: value < 1  # noqa: E731
    assert compiler._tuned("key", options, lambda: 1.0, ours_won) == (1.0, False)
    assert compiler._lookup("key", options) == (False, None)  # torch won: measured again
    assert compiler._tuned("won", options, lambda: 0.5, ours_won) == (0.5, False)
    assert compiler._lookup("won", options) == (True, 0.5)  # holds for the full kernels
    moves = kernel_moves()
    assert kernel_moves() == moves and not measured.full  # not landed: no move
    landed.set()
    measured._full_compile.result(10)
    assert kernel_moves() == moves + 1 and measured.full and not on_the_fast_tier()
    # a runner whose full kernels landed and that was not called since is on them before a
    # measurement begins: a torch win measured then is cached
    cached["full"] = False
    landed.clear()
    left = PipelineRunner(entry, form, None)
    landed.set()
    left._full_compile.result(10)
    assert not left.full and on_the_fast_tier() is False and left.full
    assert compiler._tuned("later", options, lambda: 1.0) == (1.0, False)
    assert compiler._lookup("later", options) == (True, 1.0)
    assert compiler._tuned("key", options, lambda: 2.0) == (2.0, False)
    assert compiler._tuned("key", options, lambda: 3.0) == (2.0, True)
    cached["full"] = False
    monkeypatch.setattr(pipelines, "TIERED_PIPELINES", False)  # off: no fast tier
    assert PipelineRunner(entry, form, None).full and loaded[-1] is False
