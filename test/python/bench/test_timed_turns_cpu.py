"""bench/mlp.py's timing and reporting without a GPU: a turn's outputs poisoned between its
untimed runs and its timed ones, the floor at the run's highest measured rate (settled after
the run, checked by the table), the plot's one baseline."""

from __future__ import annotations

import math

import pytest

from tilesync.bench import mlp


class _WritesOnlyUntimed:
    """A form whose untimed runs (before the hold: a first check, the hold's calibration; behind
    it: the turn's warm-up) write the right answer and whose timed runs write nothing: what a
    check must catch. `log` records each run (with whether it wrote) and each poison."""

    def __init__(self, warmups: list[int]):
        self.warmups = warmups  # the uncounted runs of each turn, in order
        self.y = math.nan
        self.holds = 0
        self.behind_hold: int | None = None  # runs since the hold, while it holds
        self.log: list[tuple[str, bool]] = []

    def hold(self, ns, stream=None) -> None:
        self.holds += 1
        self.behind_hold = 0

    def run(self):
        wrote = True
        if self.behind_hold is not None:
            self.behind_hold += 1
            wrote = self.behind_hold <= self.warmups[self.holds - 1]
        if wrote:
            self.y = 1.0
        self.log.append(("run", wrote))
        return 0.0, 0.1

    def synchronize(self) -> None:
        self.behind_hold = None

    def poison(self) -> None:
        self.y = math.nan
        self.log.append(("poison", False))

    def check(self) -> float:
        return mlp.check_error("untimed-only", 0.0 if self.y == 1.0 else math.inf)

    def form(self) -> mlp.TimedForm:
        return mlp.TimedForm(self.run, lambda s, e: e - s, self.synchronize, None, self.poison,
                             self.check)


def test_a_turn_whose_timed_runs_write_nothing_fails_its_check(monkeypatch):
    """The poison comes after a turn's untimed runs (the hold's three calibration runs, the
    warm-up) and right before its timed runs, in stream order: the check after the turn reads
    what the timed runs wrote. Poisoned at the turn's start, the untimed runs' right answer
    passed a program whose timed runs write nothing (/tmp/audit_bench/unpoisoned_turns.py)."""
    import tilesync.harness.timing as timing

    warmup, reps, turns = 2, 10, 5
    broken = _WritesOnlyUntimed([warmup] + [mlp.TURN_WARMUP] * (turns - 1))
    monkeypatch.setattr(timing, "hold_stream", broken.hold)
    record = mlp.time_forms({"broken": broken.form()}, warmup, reps, turns)["broken"]
    assert "median_ms" not in record
    assert record["error"].startswith("AssertionError: untimed-only: ")
    # its first check: one run on poisoned outputs; then the first turn: three calibration
    # runs, the warm-up, the poison, the timed runs (writing nothing), the check fails
    kinds = [kind for kind, _ in broken.log]
    assert kinds[:2] == ["poison", "run"]
    assert kinds[2:] == ["run"] * (3 + warmup) + ["poison"] + ["run"] * (reps // turns)
    assert not any(wrote for _, wrote in broken.log[3 + 3 + warmup:])


def test_the_poison_of_every_turn_follows_its_untimed_runs(monkeypatch):
    """A form that writes on every run passes; each turn poisons once, after the hold's
    calibration and the turn's warm-up, and its samples are the timed runs' alone."""
    import tilesync.harness.timing as timing

    log: list[str] = []
    y = [math.nan]

    def run():
        y[0] = 1.0
        log.append("run")
        return 0.0, float(len(log))

    def poison():
        y[0] = math.nan
        log.append("poison")

    def check():
        log.append("check")
        return 0.0 if y[0] == 1.0 else math.inf

    monkeypatch.setattr(timing, "hold_stream", lambda ns, stream=None: log.append("hold"))
    form = mlp.TimedForm(run, lambda s, e: e - s, lambda: None, None, poison, check)
    out = mlp.time_in_turns({"a": form}, warmup=3, reps=4, turns=2)["a"]
    assert out["reps"] == 4 and out["rel_error"] == 0.0
    turn = ["run"] * 3 + ["hold"]  # the hold's calibration, then the hold
    assert log == [*turn, "run", "run", "run", "poison", "run", "run", "check",
                   *turn, "run", "poison", "run", "run", "check"]
    # elapsed = the log's length at the run: the timed runs' positions
    assert out["samples_ms"] == [9.0, 10.0, 18.0, 19.0]


def _timing(ms: float) -> dict:
    return {"median_ms": ms, "p10_ms": 0.9 * ms, "p90_ms": 1.1 * ms, "rel_error": 1e-3}


def _result(rates=None) -> dict:
    flops = 10**12  # 1 TFLOP: at 1 ms, 1000 TFLOP/s
    row = {"model": "gpt3", "M": 2048, "configs": "c", "ratio": 4, "flops": flops,
           "floor_bytes": 10**9, "floor_ms": 1.25,  # at the probe's 800 TFLOP/s
           "modes": {"stream_sync": _timing(1.1), "tma:stream_sync": _timing(1.05),
                     "tma:row+pdl": _timing(1.0), "torch_graph": _timing(1.2),
                     "tile+pdl": {"error": "AssertionError: wrong"}}}
    return {"experiment": "mlp", "library": "torch x", "reps": 3, "warmup": 1, "sms": 132,
            "programs_compiled": 1, "compile_seconds": 1.0, "programs_cached": 0,
            "seconds": 2.0, "rows": [row],
            "rates": rates or {"peak_tflops": 800.0, "copy_gbps": 3000.0,
                               "peak_probe": "cuBLAS fp16 4096^3"}}


def test_the_floor_is_at_the_highest_rate_measured_in_the_run():
    """A form faster than the cuBLAS probe's rate sets the peak (named with its rate in
    floor_rates, the probe's beside it) and the floors are recomputed at it: no median below
    its floor. The probe still decides where nothing beat it."""
    from tilesync.bench.report import check_floors, settle_floors

    result = _result()
    assert result["rows"][0]["floor_ms"] > 1.0  # the probe's floor: above tma:row+pdl's 1.0 ms
    rates = settle_floors(result, mlp.row_label)
    assert rates["peak_tflops"] == pytest.approx(1000.0)
    assert rates["peak_from"] == "gpt3 M=2048 tma:row+pdl"
    assert rates["probe_tflops"] == 800.0 and rates["probe_gbps"] == 3000.0
    assert rates["copy_gbps"] == 3000.0 and rates["copy_from"] == "device copy (probe)"
    assert result["floor_rates"] is rates
    assert result["rows"][0]["floor_ms"] == pytest.approx(1.0)
    check_floors(result, mlp.row_label)
    table = mlp.mlp_table(result)
    assert "flops at 1000 TFLOP/s (the run's highest: gpt3 M=2048 tma:row+pdl)" in table

    slow = _result({"peak_tflops": 2000.0, "copy_gbps": 3000.0,
                    "peak_probe": "cuBLAS fp16 8192^3"})
    assert settle_floors(slow, mlp.row_label)["peak_from"] == "cuBLAS fp16 8192^3 (probe)"
    assert slow["rows"][0]["floor_ms"] == pytest.approx(0.5)


def test_a_form_faster_than_a_settled_floor_fails_the_table_where_it_lies():
    """The table asserts that no timed median lies below its floor once the floors are settled
    (a located message, not a clamp); a result recorded before (no floor_rates) renders with
    its floors and peak as recorded."""
    from tilesync.bench.report import settle_floors

    result = _result()
    settle_floors(result, mlp.row_label)
    result["rows"][0]["modes"]["tma:tile+pdl"] = _timing(0.9)  # not in the settled peak
    with pytest.raises(AssertionError, match=r"mlp gpt3 M=2048 tma:tile\+pdl: median 0\.9 ms "
                                             r"below its floor 1 ms"):
        mlp.mlp_table(result)

    old = _result()
    table = mlp.mlp_table(old)  # its tma:row+pdl beats its floor: as recorded, not checked
    assert "floor_rates" not in old
    assert any(line.split()[:2] == ["floor", "1.2500"] for line in table.splitlines())
    assert f"at 800 TFLOP/s ({mlp.PEAK_SOURCE}, this run; peak: as recorded)" in table


def test_the_mlp_plot_draws_every_mode_against_cublas_in_a_graph(drawn_bars):
    """One baseline for every bar of the axis (torch_graph, as conv's and attention's plots):
    the TMA modes' bars were against tma:stream_sync, torch_graph's against stream_sync."""
    result = {**_result(), "device": {"name": "test"},
              "modes": ["stream_sync", "tma:stream_sync", "tma:row+pdl", "tile+pdl"]}
    bars, ax = drawn_bars(mlp.mlp_plot, result)
    assert bars == {(0, "stream_sync"): pytest.approx(1.2 / 1.1),
                    (0, "tma:stream_sync"): pytest.approx(1.2 / 1.05),
                    (0, "tma:row+pdl"): pytest.approx(1.2)}
    assert "torch_graph" in ax.ylabel


def test_the_bench_settles_its_floors_on_the_run(monkeypatch):
    """mlp_benchmarks records each row's floor bytes and settles the floors after the run at
    its highest measured rate: a mode faster than a floor at cuBLAS's probe sets the peak."""
    from types import SimpleNamespace

    from tilesync.bench import mode_choice
    from tilesync.kernels.mlp import mlp_spec
    from tilesync.runtime import device

    spec = mlp_spec("gpt3", 2048)
    fast_ms = spec.flops / 1e9 / 900.0  # 900 TFLOP/s
    torch = SimpleNamespace(__version__="x", cuda=SimpleNamespace(empty_cache=lambda: None),
                            backends=SimpleNamespace(cuda=SimpleNamespace(
                                matmul=SimpleNamespace())))

    def time_forms(forms, warmup, reps):
        return {"stream_sync": _timing(fast_ms), "torch_graph@row,row": _timing(2 * fast_ms)}

    monkeypatch.setattr(device, "get_device", lambda: SimpleNamespace(
        arch="sm_90", sm_count=132, name="test", l2_cache_bytes=50 << 20))
    monkeypatch.setattr(mlp, "compile_jobs", lambda jobs, target, processes, cache: {
        job: {"resources": {}, "host": ""} for job in jobs})
    monkeypatch.setattr(mlp, "_torch_or_none", lambda: (torch, ""))
    monkeypatch.setattr(mlp, "measured_rates", lambda torch, warmup, reps: {
        "peak_tflops": 800.0, "copy_gbps": 3000.0, "peak_probe": "cuBLAS fp16 4096^3"})
    monkeypatch.setattr(mlp, "_Data", lambda torch, spec, seed: SimpleNamespace(
        drop_torch_layouts=lambda: None))
    monkeypatch.setattr(mlp, "load_program", lambda entry: None)
    monkeypatch.setattr(mlp, "kernel_args", lambda spec, data: {})
    monkeypatch.setattr(mlp, "program_form", lambda program, args, data, name: None)
    monkeypatch.setattr(mlp, "torch_layout_forms", lambda data: ({}, {}))
    monkeypatch.setattr(mlp, "time_forms", time_forms)
    monkeypatch.setattr(mlp, "_policy_of", lambda host: "none")
    monkeypatch.setattr(mlp, "sized_copy", lambda *args: {"median_ms": 1.0})
    monkeypatch.setattr(mode_choice, "bench_row", lambda *args, **kwargs: {})
    result = mlp.mlp_benchmarks(("gpt3",), (2048,), modes=("stream_sync",), cache_dir=None)
    (row,) = result["rows"]
    assert row["floor_bytes"] == mlp.floor_bytes(spec)
    assert result["floor_rates"]["peak_tflops"] == pytest.approx(900.0)
    assert result["floor_rates"]["peak_from"] == "gpt3 M=2048 stream_sync"
    assert row["floor_ms"] == pytest.approx(fast_ms)
