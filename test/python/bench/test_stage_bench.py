"""What bench conv and bench attention share (bench/stage_bench.py), without a GPU: the modes of
a row timed one after another (a failure recorded, a CUDA error ends the GPU work), the
library's paths under their prefixes, the table's columns, a mode refused unless every stage is
proved, and the precompile summary."""

from __future__ import annotations

import pytest

from tilesync.bench import attention, mlp, stage_bench
from tilesync.runtime.errors import TilesyncRuntimeError

TIMING = {"median_ms": 0.02, "p10_ms": 0.019, "p90_ms": 0.021, "rel_error": 1e-3}


def test_modes_are_timed_until_the_context_is_lost():
    row = {"modes": {}}
    entries = {"a": {"error": "compile: boom"}, "b": {"host": ""}, "c": {"host": ""},
               "d": {"host": ""}, "e": {"host": ""}}
    ran = []

    def run(entry, name):
        ran.append(name)
        if name.endswith(" c"):
            raise ValueError("wrong result")
        if name.endswith(" d"):
            raise TilesyncRuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")
        return dict(TIMING)

    lost = stage_bench.time_modes(row, list(entries), entries, run, "T=8")
    assert ran == ["T=8 b", "T=8 c", "T=8 d"]  # e is not run: the context is gone
    assert row["modes"]["a"] == {"error": "compile: boom"} and row["modes"]["b"] == TIMING
    assert row["modes"]["c"]["error"] == "ValueError: wrong result"
    assert lost is not None and "T=8 d" in lost and "e" not in row["modes"]


def test_library_paths_are_recorded_under_their_prefixes(monkeypatch):
    def run_torch(data, warmup, reps, library):
        if library == "broken":
            raise RuntimeError("no kernel")
        return {"torch_eager": {"lib": library}, "torch_graph": {"lib": library}}

    monkeypatch.setattr(mlp, "run_torch", run_torch)
    row = {"modes": {}}
    stage_bench.time_libraries(row, None, 1, 1, {"torch": "chain", "torch_sdpa": "sdpa",
                                                 "other": "broken"})
    assert row["modes"]["torch_graph"] == {"lib": "chain"}
    assert row["modes"]["torch_sdpa_eager"] == row["modes"]["torch_sdpa_graph"] == {"lib": "sdpa"}
    assert row["modes"]["other_eager"] == {"error": "RuntimeError: no kernel"}


def test_the_table_gives_each_reference_its_column():
    modes = {"stream_sync": {**TIMING, "median_ms": 0.03}, "row+pdl": {**TIMING, "policy": "x"},
             "torch_graph": {**TIMING, "median_ms": 0.01},
             "torch_sdpa_graph": {**TIMING, "median_ms": 0.04}, "tile+pdl": {"error": "e"}}
    row = {"shape": "T=512 C=128", "floor_ms": 0.005, "flops": 10**9, "modes": modes,
           "speedup": mlp.speedups(modes)}
    result = {"library": "torch", "reps": 3, "warmup": 1, "sms": 132, "programs_compiled": 2,
              "compile_seconds": 1.0, "programs_cached": 0, "verify": "proved", "seconds": 2.0,
              "rates": {"peak_tflops": 700.0, "copy_gbps": 3000.0}, "rows": [row]}
    table = attention.attention_table(result)
    (line,) = [ln for ln in table.splitlines() if " row+pdl " in ln]
    speedup, vs_graph, vs_sdpa, per_floor, tflops = line.split()[3:8]
    assert (float(speedup), float(vs_graph), float(vs_sdpa), float(per_floor)) == \
        (1.5, 0.5, 2.0, 4.0)
    assert float(tflops) == pytest.approx(50.0)  # 1 GFLOP in 20 us
    assert "tile+pdl           FAILED: e" in table


def test_a_mode_runs_only_when_every_stage_is_proved():
    host = ('builtin.module {\n  sync.stage @a {sync.verified = "proved", kernel = @m::@a, '
            'grid = array<i64: 1, 1>, block = array<i64: 32, 1, 1>, tile = array<i64: 8, 8>}\n'
            '  sync.stage @b {kernel = @m::@b, grid = array<i64: 1, 1>, '
            'block = array<i64: 32, 1, 1>, tile = array<i64: 8, 8>}\n}')
    assert stage_bench.verdicts(host) == {"a": "proved"}
    with pytest.raises(AssertionError, match="did not prove every stage"):
        stage_bench.run_proved({"host": host}, None, {}, 1, 1, "x", ("a", "b"))


def test_precompile_says_what_failed():
    class Cache:
        hits = 1

    def compile_jobs(jobs, target, processes, cache):
        return {job: ({"error": "boom"} if job == "bad" else {}) for job in jobs}

    summary = stage_bench.precompile(["ok", "cached", "bad"], compile_jobs, Cache())
    assert summary["programs"] == 3 and summary["compiled"] == 2
    assert summary["failed"] == {"bad": "boom"}
