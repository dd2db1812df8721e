"""tools/explain.py: the wave-model report of a program, and its command line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from xdsl.dialects.builtin import ModuleOp

from tilesync.tools.explain import explain, load, main

# Two synthetic stages of 317 blocks of 1024 threads (2 per SM on 132 SMs: 1.2 waves each),
# the consumer reading tile for tile, and a GPT-3-MLP-like pair with a RowSync policy.
PROGRAM = """
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 317>, block = array<i64: 1024>,
                 tile = array<i64: 1>, order = #sync.order<row_major>,
                 blocks_per_sm = 2 : i64, limiter = "threads+registers"}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 317>, block = array<i64: 1024>,
                 tile = array<i64: 1>, order = #sync.order<column_major>, blocks_per_sm = 2 : i64}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p {priority = -1 : i64}
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}

  sync.stage @mlp1 {kernel = @k::@g, grid = array<i64: 4, 48>, block = array<i64: 256, 1, 1>,
                    tile = array<i64: 256, 128, 32>,
                    policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>,
                    registers = 128 : i64, shared_bytes = 98304 : i64}
  sync.stage @mlp2 {kernel = @k::@g, grid = array<i64: 4, 96>, block = array<i64: 256, 1, 1>,
                    tile = array<i64: 256, 128, 32>}
  sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 48)
}
"""


@pytest.fixture
def program_file(tmp_path):
    path = tmp_path / "prog.mlir"
    path.write_text(PROGRAM)
    return path


def _section(text: str, header: str) -> str:
    """The lines of `text` from `header` up to the next blank line."""
    start = text.index(header)
    end = text.find("\n\n", start)
    return text[start:] if end < 0 else text[start:end]


def test_stage_lines_follow_table_one(program_file):
    text = explain(load(str(program_file)))
    p = _section(text, "stage @p:")
    assert "grid (317) = 317 blocks of 1024 threads" in p
    assert "blocks per SM: 2 (threads+registers), 264 per wave" in p
    # 317 / 264 = 1.2 waves: last wave 53 of 264 slots (20.1 %), average 1.2 / 2 (60 %).
    assert "waves: 1.201 (2 when alone); last wave 53/264 blocks = 20.1 %" in p
    assert "average utilization 60.0 %" in p
    assert "order: row_major" in p
    c = _section(text, "stage @c:")
    assert "order: column_major" in c
    assert "reads @p (operand 0): tiles (d0) -> (d0)" in c


def test_chain_prediction_and_optimizations(program_file):
    text = explain(load(str(program_file)))
    chain = _section(text, "dependent stages @p, @c:")
    assert "stream sync:   4 (2 + 2)" in chain
    assert "per-tile sync: 3 (ceil(1.201 + 1.201) = ceil(2.402))" in chain
    assert "predicted speedup: 1.333x" in chain
    assert "W (drop the wait-kernel @p -> @c): not legal" in chain
    assert "T (drop the column_major order of @c): not legal" in chain


def test_computed_occupancy_and_policy(program_file):
    text = explain(load(str(program_file)))
    mlp1 = _section(text, "stage @mlp1:")
    # No blocks_per_sm: computed from the recorded registers and shared memory, and said so.
    assert "blocks per SM: 2 (registers+shared_memory; computed), 264 per wave" in mlp1
    assert "policy: RowSync (d0, d1) -> (d0), posts = 48" in mlp1
    mlp2 = _section(text, "stage @mlp2:")
    assert (
        "blocks per SM: 8 (threads+registers; computed, assuming 32 registers and no "
        "shared memory)" in mlp2
    )
    assert "waits by RowSync (d0, d1) -> (d0), posts = 48" in mlp2
    chain = _section(text, "dependent stages @mlp1, @mlp2:")
    # 192/264 + 384/1056 waves = 0.727 + 0.364: one wave either way.
    assert "stream sync:   2 (1 + 1)" in chain and "predicted speedup: 1x" in chain


def test_sms_change_the_waves(program_file):
    text = explain(load(str(program_file)), sms=108)
    assert "216 per wave" in text and "waves: 1.468" in text


def test_main_prints_the_report(program_file, capsys):
    assert main([str(program_file), "--sms", "132"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("wave model on 132 SMs (sm_90)")
    assert "predicted speedup: 1.333x" in out


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (None, [], "No such file"),
        ("builtin.module { sync.stage @x {", [], "bad.mlir:1:"),
        ("builtin.module {\n  sync.bogus @x\n}", [], "sync.bogus is not registered"),
        (PROGRAM, ["--sms", "0"], "--sms must be positive"),
        (PROGRAM, ["--arch", "sm_75"], "no occupancy limits for arch 'sm_75'"),
    ],
)
def test_main_bad_input_is_one_line(tmp_path, capsys, content, args, message):
    path = tmp_path / "bad.mlir"
    if content is not None:
        path.write_text(content)
    assert main([str(path), *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert "\n" not in err and "Traceback" not in err
    located = err.startswith(str(path).removesuffix("bad.mlir"))  # file:line:col: error:
    assert (located or err.startswith("explain: error:")) and message in err


def test_module_without_stages():
    assert "no sync.stage in this module" in explain(ModuleOp([]))


def test_python_dash_m(program_file):
    run = subprocess.run(
        [sys.executable, "-m", "tilesync.tools.explain", str(program_file), "--sms", "132"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "predicted speedup: 1.333x" in run.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tilesync.tools.explain", str(program_file) + ".missing"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
