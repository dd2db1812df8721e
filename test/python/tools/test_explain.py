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
  sync.launch @mlp1 {stream = 2 : i64}
  sync.launch @mlp2 {stream = 2 : i64, fused = true}
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


def test_a_launch_others_join_is_named(program_file):
    text = explain(load(str(program_file)))
    chain = _section(text, "dependent stages @mlp1, @mlp2:")
    assert "one launch: @mlp1, @mlp2 (one grid, tickets in that order)" in chain
    assert "one launch" not in _section(text, "dependent stages @p, @c:")


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
        (PROGRAM, ["--arch", "sm_75"], "error: unknown target 'sm_75'; choose one of sm_80,"),
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
    assert "\n" not in err and "Traceback" not in err and "internal error" not in err
    located = err.startswith(str(path).removesuffix("bad.mlir"))  # file:line:col: error:
    assert (located or err.startswith("explain: error:")) and message in err



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


def test_a_pipeline_from_the_mlp_generator_is_explained_stage_by_stage():
    """The NeRF-style generated pipeline (fused stages, a skip, a dot head): each stage's
    kernel and CTAs, each queue's payload; with rates recorded (what the bench measures) the
    model names the slowest stage; without the compiled kernels' resources no co-residency is
    claimed, and the line says what would give it."""
    from xdsl.dialects.builtin import FloatAttr, f64

    from tilesync.dialects import dataflow
    from tilesync.kernels.mlp_pipeline import fitting_stack, mlp_pipeline_module

    stack = fitting_stack(4096, (64, 256, 256, 256, 128, 16), skips=(2,), fused=(1, 4),
                          plain_layers=(4,), dot_head=3, ctas=(4, 8, 3))
    module = mlp_pipeline_module(stack)
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    for stage, rate in zip(pipeline.stages, (1e6, 4e6, 2e6), strict=True):
        stage.attributes["bsp_rate"] = FloatAttr(rate, f64)
    text = explain(module)
    assert "dataflow pipeline @mlp on 132 SMs (sm_90): 3 stages, 2 queues, 15 CTAs" in text
    assert "stage @layers0_1: tensor, 4 CTAs, 64 tickets a launch; reads -, writes @h1" in text
    assert "stage @layer2: tensor, 8 CTAs" in text and "reads @h1, writes @h2" in text
    assert "stage @layers3_4: tensor, 3 CTAs" in text and "reads @h2, writes -" in text
    # 64 tiles at 1e6 x 4 / 132 tiles/s: 2.112 ms, the slowest of 2.112, 0.264 and 1.408 ms
    assert "allotment model: 2.112 ms a launch at most, bound by @layers0_1" in text
    assert "co-residency: not proved: dataflow-verify: stage @layers0_1: occupancy unknown" \
        in text
    # a recorded utilization speeds a stage up on chip, as dataflow-allot-ctas's model does:
    # the first stage at half its bulk utilization takes 1.056 ms, and layers3_4 (1.408) bounds it
    pipeline.stages[0].attributes["utilization"] = FloatAttr(0.5, f64)
    text = explain(module)
    assert "(x2 on chip) with 4 CTAs of 132: 1.056 ms a launch" in text
    assert "allotment model: 1.408 ms a launch at most, bound by @layers3_4" in text


def test_explain_refuses_a_module_with_neither_stages_nor_pipelines():
    assert "no sync.stage or dataflow.pipeline in this module" in explain(ModuleOp([]))
