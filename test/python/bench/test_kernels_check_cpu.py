"""`tilesync bench kernels`' rows (bench/kernels.py) without a GPU: our chosen kernel's output
is poisoned before each timed turn and checked after it against torch's fp32 result (a wrong
kernel fails its row, a right one records its error); a conv or softmax row times ours and the
library's forms (eager and replayed from a CUDA graph) in turns, cuDNN with cudnn.benchmark on
(restored after), its ratio against the library's fastest form; a softmax's inputs rotate past
L2. The device is faked: torch on the CPU, events on a clock the fake kernels advance."""

from __future__ import annotations

import importlib
import itertools
import types

import pytest

torch = pytest.importorskip("torch")

from tilesync.bench import kernels as bk  # noqa: E402
from tilesync.bench import mlp  # noqa: E402
from tilesync.harness import autotune  # noqa: E402
from tilesync.harness.autotune import Choice, Measured  # noqa: E402
from tilesync.kernels.config import conv2d_config, softmax_config, tma_ws_config  # noqa: E402

CLOCK = {"ms": 0.0}
RUNS: list[tuple[str, int]] = []  # (form, copy of the inputs) of every run, in order


class _Event:
    def record(self, stream=None):
        self.ms = CLOCK["ms"]


def _elapsed(start, end) -> float:
    return end.ms - start.ms


def _ran(form: str, copy: int, ms: float) -> None:
    RUNS.append((form, copy))
    CLOCK["ms"] += ms


class _Kernel:
    num_regs = 128


@pytest.fixture
def cpu_device(monkeypatch):
    """torch's CUDA calls on the CPU, our events on CLOCK, no hold kernel; bench.mlp.torch_forms
    as the stage benches' fake: eager 0.03 ms a run, the graph 0.02 (its output poisoned before
    each turn), each checked through `data.error`; cudnn.benchmark off to begin with."""
    from tilesync.harness import timing as harness_timing
    from tilesync.runtime import stream

    launch = importlib.import_module("tilesync.runtime.launch")
    CLOCK["ms"] = 0.0
    RUNS.clear()
    monkeypatch.setattr(stream, "Event", _Event)
    monkeypatch.setattr(stream, "elapsed_ms", _elapsed)
    monkeypatch.setattr(launch, "synchronize", lambda stream=None: None)
    monkeypatch.setattr(harness_timing, "hold_stream", lambda ns, stream=None: None)
    for name in ("randn", "empty"):
        made = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda *a, made=made, device=None, **k: made(*a, **k))
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    benchmark_seen = []

    def torch_forms(data, library, name=""):
        latest = [None]
        static = [None]

        def form(kind, ms, before, output):
            def run():
                benchmark_seen.append(torch.backends.cudnn.benchmark)
                start = _Event()
                start.record()
                out = library()
                if kind == "graph":
                    static[0] = out
                latest[0] = out
                _ran(kind, 0, ms)
                end = _Event()
                end.record()
                return start, end
            return mlp.TimedForm(run, _elapsed, lambda: None, None, before,
                                 lambda: mlp.check_error(kind + name, data.error(output())))

        return ({"torch_eager": form("eager", 0.03, lambda: None, lambda: latest[0]),
                 "torch_graph": form("graph", 0.02,
                                     lambda: static[0] is not None and static[0].fill_(
                                         float("nan")), lambda: static[0])}, {})

    monkeypatch.setattr(mlp, "torch_forms", torch_forms)
    return types.SimpleNamespace(benchmark_seen=benchmark_seen)


# -- GEMM rows ------------------------------------------------------------------------------

GEMM = bk.Workload("gemm_cpu", 128, 64, 64)
CFG = tma_ws_config(128, 64, 64, tile=(64, 64, 64))


class _GemmRunner:
    """Ours on the CPU: right, or (`wrong_after`) right for that many launches, then off by a
    tenth (a kernel that only a check after the timed runs catches)."""

    wrong_after: int | None = None

    def __init__(self, cfg, ptx=None):
        self.cfg, self.kernel, self.launches = cfg, _Kernel(), 0

    def launch(self, a, b, c, bias=None):
        self.launches += 1
        cfg = self.cfg
        out = a.float() @ b.reshape(cfg.N, cfg.K).float().T
        wrong = self.wrong_after is not None and self.launches > self.wrong_after
        c.copy_(out * (1.1 if wrong else 1.0))
        _ran("ours", next(i for i, x in enumerate(OPS.a) if x is a), 0.01)


def _operands(copies: int):
    ops = object.__new__(bk._Operands)
    ops.copies, ops.torch = copies, torch
    gen = torch.Generator().manual_seed(0)
    ops.a = [(torch.randn(GEMM.M, GEMM.K, generator=gen) * GEMM.K ** -0.5).half()
             for _ in range(copies)]
    ops.b = [torch.randn(GEMM.K, GEMM.N, generator=gen).half() for _ in range(copies)]
    ops.c = torch.empty(GEMM.M, GEMM.N, dtype=torch.float16)
    ops.full = torch.empty(GEMM.M, GEMM.N, dtype=torch.float16)
    return ops


OPS = types.SimpleNamespace(a=[])


def _bench_gemm(monkeypatch, wrong_after):
    from tilesync.harness import runner

    monkeypatch.setattr(_GemmRunner, "wrong_after", wrong_after)
    monkeypatch.setattr(runner, "GemmRunner", _GemmRunner)
    monkeypatch.setattr(autotune, "choose_gemm", lambda problem, **_: Choice(
        CFG, 0.01, [Measured(CFG, 0.01, 1e-4)], checked=True, rel_error=1e-4))
    matmul = torch.matmul

    def cublas(a, b, **kwargs):  # the library's GEMM forms: 0.012 ms a run
        _ran("library", next(i for i, x in enumerate(OPS.a) if x is a), 0.012)
        return matmul(a, b, **kwargs)

    monkeypatch.setattr(torch, "matmul", cublas)
    ops = _operands(copies=2)
    OPS.a = ops.a
    tth = types.SimpleNamespace(torch=torch)
    return bk._bench_workload(GEMM, {CFG: "ptx"}, ops, warmup=1, reps=10, copy_gbps=None,
                              tth=tth, tuning_cache=None, l2=1 << 20)


def test_our_gemm_is_checked_against_torch_fp32_after_the_timed_turns(cpu_device,
                                                                      monkeypatch):
    row = _bench_gemm(monkeypatch, wrong_after=None)
    ours = row["ours"]
    assert ours is not None and 0 < ours["rel_error"] < autotune.TOLERANCE["f16"]
    assert ours["tolerance"] == autotune.TOLERANCE["f16"]
    assert row["choice"]["checked"] and row["configs"][0]["rel_error"] == 1e-4
    assert {copy for form, copy in RUNS if form == "ours"} == {0, 1}  # both copies checked
    assert "rel err" in bk.kernels_table({
        "reps": 10, "warmup": 1, "library": "torch", "library_note": "cpu", "seconds": 1.0,
        "copy": {"gbps": 1.0, "how": "fake", "bytes": 1 << 30}, "configs_compiled": 1,
        "compile_seconds": 0.0, "gemm": [row]})


def test_a_gemm_that_goes_wrong_during_the_timed_runs_fails_its_row(cpu_device, monkeypatch):
    row = _bench_gemm(monkeypatch, wrong_after=1)  # right on the first (checked) run only
    assert row["ours"] is None and "ratio" not in row
    assert "WrongOutput" in row["error"] and "wrong output" in row["error"]
    table = bk.kernels_table({
        "reps": 10, "warmup": 1, "library": "torch", "library_note": "cpu", "seconds": 1.0,
        "copy": {"gbps": 1.0, "how": "fake", "bytes": 1 << 30}, "configs_compiled": 1,
        "compile_seconds": 0.0, "gemm": [row]})
    assert "FAILED: WrongOutput" in table


# -- conv and softmax rows --------------------------------------------------------------------

CONV = conv2d_config(1, 8, 8, 16, 16, tile=(64, 64, 32), stages=2)


class _ConvRunner:
    wrong = False

    def __init__(self, cfg, ptx=None):
        self.cfg, self.kernel = cfg, _Kernel()

    def launch(self, x, w, y, bias=None):
        nchw = (0, 3, 1, 2)
        out = torch.nn.functional.conv2d(x.permute(nchw).float(), w.permute(nchw).float(),
                                         padding=1).permute(0, 2, 3, 1)
        y.copy_(out * (1.1 if self.wrong else 1.0))
        _ran("ours", 0, 0.025)


def _bench_conv(monkeypatch):
    from tilesync.harness import runner

    monkeypatch.setattr(runner, "Conv2dRunner", _ConvRunner)
    monkeypatch.setattr(autotune, "choose", lambda problem, **_: Choice(
        CONV, 0.025, [Measured(CONV, 0.025, 1e-4)], checked=True, rel_error=1e-4))
    tth = types.SimpleNamespace(torch=torch)
    return bk.conv_benchmarks({CONV: [CONV]}, {CONV: "ptx"}, warmup=1, reps=10, tth=tth)[0]


def test_a_conv_row_times_ours_and_cudnn_eager_and_graphed_in_turns(cpu_device, monkeypatch):
    row = _bench_conv(monkeypatch)
    assert "error" not in row, row.get("error")
    assert 0 < row["rel_error"] < autotune.CONV_TOLERANCE and row["tuning_checked"]
    lib = row["library"]
    assert set(lib["forms"]) == {"eager", "graph"} and lib["form"] == "graph"
    assert lib["median_ms"] == pytest.approx(0.02) and lib["rel_error"] < 1e-2
    assert row["ratio"] == pytest.approx(0.02 / 0.025)  # against the fastest form
    # cudnn.benchmark was on while cuDNN's forms ran, and is restored after
    assert cpu_device.benchmark_seen and all(cpu_device.benchmark_seen)
    assert torch.backends.cudnn.benchmark is False
    # the forms took turns (mlp.TURNS of them after a first check each), not a block each
    blocks = [form for i, (form, _) in enumerate(RUNS) if i == 0 or RUNS[i - 1][0] != form]
    assert blocks.count("ours") == blocks.count("graph") == mlp.TURNS + 1
    table = bk.conv_table([row])
    assert "graph" in table and "cudnn.benchmark on" in table


def test_a_conv_whose_output_is_wrong_fails_its_row(cpu_device, monkeypatch):
    monkeypatch.setattr(_ConvRunner, "wrong", True)
    row = _bench_conv(monkeypatch)
    assert "wrong output" in row["error"] and "ratio" not in row


SOFTMAX = softmax_config(64, 512)


class _SoftmaxRunner:
    def __init__(self, cfg, ptx=None):
        self.cfg, self.kernel = cfg, _Kernel()

    def launch(self, x, y, seed=None):
        y.copy_(torch.softmax(x.float(), dim=-1))
        _ran("ours", id(x), 0.01)


def test_a_softmax_row_rotates_its_inputs_past_l2_and_takes_turns(cpu_device, monkeypatch):
    from tilesync.harness import runner

    monkeypatch.setattr(runner, "SoftmaxRunner", _SoftmaxRunner)
    tth = types.SimpleNamespace(torch=torch)
    l2 = 2 * SOFTMAX.rows * SOFTMAX.cols  # one copy of the input fills this L2: three copies
    row = bk.softmax_benchmarks({SOFTMAX: "ptx"}, warmup=1, reps=10, tth=tth, copy_gbps=None,
                                l2=l2)[0]
    assert "error" not in row, row.get("error")
    assert row["rotating_copies"] == 3
    inputs = [x for form, x in RUNS if form == "ours"]
    assert len(set(inputs)) == 3 and all(a != b for a, b in itertools.pairwise(inputs))
    assert 0 < row["rel_error"] < bk.SOFTMAX_TOLERANCE
    assert row["library"]["form"] == "graph" and row["ratio"] == pytest.approx(0.02 / 0.01)
    assert "rotating past L2" in bk.softmax_table([row])


def test_committed_kernels_records_still_render():
    import json
    from pathlib import Path

    results = Path(bk.__file__).parent / "results"
    for name in ("kernels-nvidia-h100-80gb-hbm3.json", "kernels-nvidia-h200.json"):
        table = bk.kernels_table(json.loads((results / name).read_text()))
        assert "conv3x3" in table and "softmax" in table
        assert "rel err:" not in table  # their rows were not checked: no claim that they were
