"""`tilesync bench torch`'s table and plot from a recorded result (no GPU, no torch needed)."""

from __future__ import annotations

import pytest

from tilesync.bench.torch_models import torch_plot, torch_table


def _mode(ms: float) -> dict:
    return {"median_ms": ms, "p10_ms": 0.9 * ms, "p90_ms": 1.1 * ms, "rel_error": 1e-3}


RESULT = {"library": "torch 2.11", "warmup": 1, "reps": 3, "seconds": 1.0, "device": "test",
          "rows": [{"model": "nerf_mlp_rays", "floor_ms": 0.05,
                    "modes": {"eager": _mode(1.0), "eager graph": _mode(0.8),
                              "torch.compile": _mode(0.7), "tilesync": _mode(0.4),
                              "tilesync graph": _mode(0.32),
                              "tilesync (forced)": {"error": "RuntimeError: x"}}}]}


def test_table_has_the_graph_column_and_the_floor():
    table = torch_table(RESULT)
    assert "vs graph" in table.splitlines()[1]
    tilesync = next(line for line in table.splitlines() if " tilesync graph " in line)
    assert "3.125" in tilesync and "2.500" in tilesync  # 1.0 / 0.32 and 0.8 / 0.32
    assert "floor" in table and "0.0500" in table and "FAILED: RuntimeError" in table


def test_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    assert torch_plot(RESULT, tmp_path, "torch").exists()


def test_modes_are_timed_in_one_set_of_turns(monkeypatch):
    from tilesync.bench import torch_models
    from tilesync.frontend.torch import cost

    calls = []

    def fake_sample_ms(fns, warmup, rounds, block):
        calls.append((len(fns), warmup, rounds, block))
        return [[float(10 * i + k) for k in range(rounds * block)] for i, _ in enumerate(fns)]

    monkeypatch.setattr(cost, "sample_ms", fake_sample_ms)
    timed = torch_models._timed_in_turns({"eager": None, "tilesync": None}, 2, 50)
    # all modes in one call, so each block of one mode sits between blocks of the others
    assert calls == [(2, 2, 50 // torch_models.TURN, torch_models.TURN)]
    assert timed["eager"]["median_ms"] == 25.0 and timed["tilesync"]["median_ms"] == 35.0
    assert timed["tilesync"]["p10_ms"] == 15.0 and timed["tilesync"]["p90_ms"] == 55.0
    assert "in 1 turns" in torch_table(RESULT)  # a result recorded before the turns


def test_the_compiled_forms_are_checked_with_the_full_kernels_and_after_the_turns(monkeypatch):
    """A form is checked on its first call (a pipeline's fast tier), again once the full
    kernels run (finish_compiles) and again after the timed turns, each time on a call whose
    output no earlier call left (a static output poisoned first): here tilesync's full kernels
    write nothing into its static output (its graph replays them), and the forced form stops
    writing during the timed turns."""
    torch = pytest.importorskip("torch")
    import tilesync.frontend.torch as tt
    from tilesync.bench import torch_models
    from tilesync.examples import torch_models as examples

    torch.manual_seed(0)
    model, x = torch.nn.Linear(8, 8), torch.randn(4, 8)
    full = [False]

    def stops_writing(after=None):
        """A form returning one static tensor, right until finish_compiles (or `after` calls
        past it), then writing nothing into it."""
        static, calls = torch.empty(4, 8), [0]

        def call(*inputs):
            calls[0] += full[0]
            if not full[0] or (after is not None and calls[0] <= after):
                static.copy_(model(*inputs))
            return static
        return call

    def compile_(fn, backend=None, **_):
        return fn if backend == "inductor" else stops_writing()

    def graphed(fn, inputs):  # a "graph" replaying fn into its own static output
        out = fn(*inputs).clone()
        return lambda: out.copy_(fn(*inputs))

    forced = stops_writing(after=2)  # its two checks with the full kernels, then wrong
    forced.report = type("Report", (), {"pieces": [type("Piece", (), {
        "choice": "tilesync", "line": lambda self: "piece"})()]})()
    monkeypatch.setattr(examples, "example", lambda name, device, rows=None: (model, [x]))
    monkeypatch.setattr(torch, "compile", compile_)
    monkeypatch.setattr(torch._dynamo, "reset", lambda: None)
    monkeypatch.setattr(tt, "compile", lambda model, inputs, mode: forced)
    monkeypatch.setattr(tt, "finish_compiles", lambda: full.__setitem__(0, True))
    monkeypatch.setattr(torch_models, "_graphed", graphed)

    def timed_in_turns(fns, warmup, reps):  # each called once, timed alike
        for fn in fns.values():
            fn()
        return {name: _mode(1.0) for name in fns}

    monkeypatch.setattr(torch_models, "_timed_in_turns", timed_in_turns)
    row = torch_models._run_model(torch, "llama_mlp", 1, 10)
    modes = row["modes"]
    assert {mode for mode, r in modes.items() if "median_ms" in r} == {
        "eager", "eager graph", "torch.compile"}
    for mode in ("tilesync", "tilesync graph"):
        assert modes[mode]["error"].startswith("with the full kernels: AssertionError")
    assert modes["tilesync (forced)"]["error"].startswith(
        "after the timed turns: AssertionError: non-finite output")


def test_the_bench_settles_its_floors_on_the_run(monkeypatch):
    """torch_benchmarks records each row's flops and floor bytes and settles the floors after
    the run at its highest measured rate (report.settle_floors); the table says where it was
    found."""
    torch = pytest.importorskip("torch")
    from tilesync.bench import mlp, torch_models
    from tilesync.examples import torch_models as examples

    def run_model(torch, name, warmup, reps, rates, rows):
        return {"model": name, "flops": 4 * 10**9, "floor_bytes": 10**6, "floor_ms": 4.0,
                "modes": {"eager": _mode(2.0), "tilesync": _mode(1.0)}}  # 4 TFLOP/s

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(examples, "input_shapes", lambda name, rows: None)
    monkeypatch.setattr(mlp, "measured_rates", lambda torch, warmup, reps: {
        "peak_tflops": 1.0, "copy_gbps": 1e6, "peak_probe": "cuBLAS fp16 4096^3"})
    monkeypatch.setattr(torch_models, "_run_model", run_model)
    result = torch_models.torch_benchmarks(("llama_mlp",))
    assert result["floor_rates"]["peak_tflops"] == pytest.approx(4.0)
    assert result["floor_rates"]["peak_from"] == "llama_mlp tilesync"
    assert result["rows"][0]["floor_ms"] == pytest.approx(1.0)
    assert "the run's highest: llama_mlp tilesync" in torch_table(result)
    assert "peak: as recorded" in torch_table({**RESULT, "rates": {"peak_tflops": 1.0,
                                                                 "copy_gbps": 1.0}})
