"""`tilesync bench compile`: the repetitions' aggregation, the table, failures, bad
arguments, the plot, and one real timed compile (without a GPU: the pieces to PTX)."""

from __future__ import annotations

import pytest

from tilesync.bench import compile_time
from tilesync.contract import TilesyncError


def _fake_child(calls: list):
    """A stand-in for the child processes: tilesync's first compile takes 2 + rep seconds, a
    cached one 0.1; torch.compile 10 and 1; the second repetition's cached torch.compile
    fails."""
    state: dict[str, int] = {}

    def run(name, tool, caches):
        calls.append((name, tool, caches))
        seen = state.setdefault(f"{tool} {caches}", 0)
        state[f"{tool} {caches}"] = seen + 1
        first = seen == 0
        rep = len({c for _, t, c in calls if t == tool}) - 1
        if tool == "tilesync":
            compile_s = 2.0 + rep if first else 0.1
            return {"gpu": False, "library": "torch 9.9", "compile_s": compile_s,
                    "to_result_s": compile_s + 0.5,
                    "pieces": [{"piece": "p", "choice": "tilesync",
                                "compile_s": compile_s - 0.5 if first else 0.01,
                                "cached": not first}]}
        if not first and rep == 1:
            return {"error": "exit 1: RuntimeError: boom"}
        return {"gpu": False, "library": "torch 9.9", "to_result_s": 10.0 if first else 1.0}

    return run


def test_each_repetition_gets_fresh_caches_that_the_cached_call_reuses(monkeypatch):
    calls: list = []
    monkeypatch.setattr(compile_time, "_run_child", _fake_child(calls))
    result = compile_time.compile_benchmarks(["llama_mlp"], fresh=3,
                                             compile_packages=False)
    caches = [c for _, tool, c in calls if tool == "tilesync"]
    assert len(caches) == 6 and len(set(caches)) == 3  # first and cached share a directory
    assert caches[0] == caches[1] and caches[1] != caches[2]
    modes = result["rows"][0]["modes"]
    assert modes["tilesync first"]["compile"] == {"median_s": 3.0, "min_s": 2.0, "max_s": 4.0}
    assert modes["tilesync first"]["to_result"]["median_s"] == 3.5
    assert modes["tilesync cached"]["pieces"]["max_s"] == 0.01
    assert modes["tilesync first"]["choices"] == ["tilesync"]
    assert modes["torch.compile first"]["to_result"]["median_s"] == 10.0
    assert modes["torch.compile cached"] == {"error": "exit 1: RuntimeError: boom"}
    assert result["library"] == "torch 9.9" and result["gpu"] is False


def test_the_table_gives_median_and_spread_and_says_what_failed(monkeypatch):
    monkeypatch.setattr(compile_time, "_run_child", _fake_child([]))
    result = compile_time.compile_benchmarks(["nerf_mlp"], fresh=3, compile_packages=False)
    table = compile_time.compile_table(result)
    first = next(line for line in table.splitlines() if "tilesync first" in line)
    assert "3.50 2.50-4.50" in first and "3.00 2.00-4.00" in first
    assert "torch.compile cached  FAILED: exit 1: RuntimeError: boom" in table
    assert "without a GPU" in table.splitlines()[0]
    assert f"{result['bytecode']:.0%} of tilesync's modules byte-compiled" in table


def test_the_packages_are_byte_compiled_where_imports_look(monkeypatch, tmp_path):
    root = tmp_path / "bytecode_pkg"
    for path in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py", "data/c.py",
                 ".hidden/__init__.py"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sources = compile_time.package_sources("bytecode_pkg")
    assert [p[len(str(root)) + 1:] for p in sources] == ["__init__.py", "a.py",
                                                         "sub/__init__.py", "sub/b.py"]
    assert compile_time.bytecode_share("bytecode_pkg") == 0.0
    compile_time.byte_compile(["bytecode_pkg", "no_such_package", "no_such.child"])
    assert compile_time.bytecode_share("bytecode_pkg") == 1.0
    calls: list = []
    monkeypatch.setattr(compile_time, "_run_child", _fake_child(calls))
    compiled: list = []
    monkeypatch.setattr(compile_time, "byte_compile", lambda: compiled.append(True))
    result = compile_time.compile_benchmarks(["edge_mlp"], fresh=1, torch_compile=False)
    assert compiled == [True] and 0.0 <= result["bytecode"] <= 1.0


def test_torch_compile_can_be_left_out_and_repetitions_must_be_positive(monkeypatch):
    calls: list = []
    monkeypatch.setattr(compile_time, "_run_child", _fake_child(calls))
    result = compile_time.compile_benchmarks(["edge_mlp"], fresh=1, torch_compile=False,
                                             compile_packages=False)
    assert {tool for _, tool, _ in calls} == {"tilesync"}
    assert set(result["rows"][0]["modes"]) == {"tilesync first", "tilesync cached"}
    monkeypatch.setattr(compile_time, "_run_child", _fake_child([]))
    two = compile_time.compile_benchmarks(["edge_mlp"], fresh=2, torch_compile=False,
                                          compile_packages=False)
    assert two["rows"][0]["modes"]["tilesync first"]["compile"]["median_s"] == 2.5  # 2 and 3
    with pytest.raises(TilesyncError, match="--fresh must be at least 1"):
        compile_time.compile_benchmarks(["edge_mlp"], fresh=0)
    with pytest.raises(TilesyncError, match="no example model 'mlp'; the examples: llama_mlp"):
        compile_time.compile_benchmarks(["mlp"])
    assert len(calls) == 2  # refused before any child ran


def test_a_child_times_a_real_compile_and_its_first_result(tmp_path):
    pytest.importorskip("torch")
    record = compile_time._child("llama_mlp", "tilesync", str(tmp_path))
    assert record["to_result_s"] >= record["compile_s"] > 0
    (piece,) = record["pieces"]
    assert piece["piece"].startswith("SwiGLU MLP") and 0 < piece["compile_s"] <= \
        record["compile_s"] and piece["cached"] is False
    again = compile_time._child("llama_mlp", "tilesync", str(tmp_path))
    assert again["pieces"][0]["cached"] is True


def test_the_plot_is_written(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(compile_time, "_run_child", _fake_child([]))
    result = compile_time.compile_benchmarks(["llama_mlp"], fresh=2, compile_packages=False)
    result["device"] = {"name": "cpu"}
    path = compile_time.compile_plot(result, tmp_path, "compile")
    assert path.name == "compile-cpu.png" and path.stat().st_size > 0
