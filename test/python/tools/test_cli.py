"""The command-line tools answer bad input with one readable line and exit 1, never a traceback."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "copy_chain.mlir"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          input=stdin, timeout=300)


def assert_one_line_error(proc: subprocess.CompletedProcess, fragment: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert fragment in proc.stderr


def test_opt_lowers_to_ptx():
    proc = run("tilesync.tools.opt", str(EXAMPLE), "-p", "tilesync-lower-to-llvm",
               "-t", "ptx{arch=sm_90a}")
    assert proc.returncode == 0, proc.stderr
    assert ".target sm_90a" in proc.stdout and ".entry consumer" in proc.stdout


def test_opt_llvm_target():
    proc = run("tilesync.tools.opt", str(EXAMPLE), "-p", "tilesync-lower-to-llvm", "-t", "llvm")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"define ptx_kernel void @\"?producer", proc.stdout)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["-p", "no-such-pass"], "no-such-pass"),
        (["-p", "convert-sync-to-nvvm{bogus=1}"], "bogus"),
        (["-t", "ptx"], "the program is empty: there is no kernel to compile"),
    ],
)
def test_opt_bad_pipeline_or_target(args, fragment, tmp_path):
    source = EXAMPLE if "-t" not in args else tmp_path / "empty.mlir"
    if "-t" in args:
        source.write_text("builtin.module {}\n")
    proc = run("tilesync.tools.opt", str(source), *args)
    assert_one_line_error(proc, fragment)


def test_opt_input_and_option_errors_are_not_internal(tmp_path):
    """A missing file, a directory, an unlowered module under -t ptx: one line that says what
    to do, not "internal error"; a bad --sms is argparse's usage error (exit 2)."""
    for source, fragment in [(tmp_path / "missing.mlir", "No such file or directory"),
                             (tmp_path, "Is a directory")]:
        proc = run("tilesync.tools.opt", str(source))
        assert_one_line_error(proc, fragment)
        assert "internal error" not in proc.stderr
    proc = run("tilesync.tools.opt", str(EXAMPLE), "-t", "ptx")
    assert_one_line_error(proc, "end the pipeline with tilesync-lower-to-llvm")
    assert "internal error" not in proc.stderr
    proc = run("tilesync.tools.opt", str(EXAMPLE), "--analyze", "--sms", "-3")
    assert proc.returncode == 2 and "expected a positive integer" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_opt_parse_error_has_location(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("builtin.module {\n  %x = arith.addi\n}\n")
    proc = run("tilesync.tools.opt", str(bad))
    assert_one_line_error(proc, f"{bad}:3:")


def test_opt_verifier_error(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(EXAMPLE.read_text().replace("posts = 1>", "posts = 2>", 1))
    proc = run("tilesync.tools.opt", str(bad))
    assert_one_line_error(proc, "TileSync")


def test_cli_compile_and_errors(tmp_path):
    out = tmp_path / "copy.ptx"
    proc = run("tilesync.tools.cli", "compile", str(EXAMPLE), "--validate", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert ".entry producer" in out.read_text()
    assert_one_line_error(run("tilesync.tools.cli", "compile", str(tmp_path / "missing.mlir")),
                          "missing.mlir")
    assert_one_line_error(run("tilesync.tools.cli", "compile", str(EXAMPLE), "--target", "sm_7"),
                          "unknown target")


def test_cli_bench_without_gpu_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "tilesync.tools.cli", "bench", "copy"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TILESYNC_DISABLE_GPU": "1"})
    assert_one_line_error(proc, "GPU")


def test_cli_bench_modes_are_checked_before_the_gpu():
    env = {**os.environ, "TILESYNC_DISABLE_GPU": "1"}

    def bench(*args):
        return subprocess.run([sys.executable, "-m", "tilesync.tools.cli", "bench", *args],
                              capture_output=True, text=True, timeout=300, env=env)

    assert_one_line_error(bench("attention", "--modes", "fused:row+pdl", "flash"),
                          "unknown attention mode flash")
    assert_one_line_error(bench("mlp", "--modes", "row+pdl"), "not for bench mlp")
    # known modes pass the check and reach the GPU's
    assert_one_line_error(bench("attention", "--modes", "fused:row+pdl"), "GPU")


def test_cli_demo_runs_without_gpu():
    proc = subprocess.run([sys.executable, "-m", "tilesync.tools.cli", "demo"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TILESYNC_DISABLE_GPU": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "copy_chain.mlir: compiled" in proc.stdout
    assert "no GPU here" in proc.stdout


def test_explain_and_analyze():
    example = ROOT / "examples" / "gpt3_mlp_sync.mlir"
    proc = run("tilesync.tools.cli", "explain", str(example))
    assert proc.returncode == 0, proc.stderr
    assert "stage @gemm1: grid (8, 48) = 384 blocks" in proc.stdout
    assert "predicted speedup: 1.5x" in proc.stdout
    proc = run("tilesync.tools.cli", "explain", str(example), "--measure")
    assert proc.returncode == 0, proc.stderr
    assert "blocks per SM: 1 (registers" in proc.stdout  # measured: > 32 registers a thread
    proc = run("tilesync.tools.opt", str(example), "--analyze")
    assert proc.returncode == 0, proc.stderr
    assert "stage @gemm2" in proc.stdout and "builtin.module" not in proc.stdout
    assert_one_line_error(run("tilesync.tools.cli", "explain", str(ROOT / "nope.mlir")),
                          "nope.mlir")


def test_explain_measures_a_pipelines_kernels_for_its_arch(tmp_path):
    """`explain --measure --arch sm_90a` compiles the wgmma stage kernels for the arch asked
    for and proves the pipeline co-resident from what nvJitLink reports; measuring for sm_90
    cannot compile wgmma and says so in one line."""
    from tilesync.kernels.mlp_pipeline import MlpStack, mlp_pipeline_module

    path = tmp_path / "pipe.mlir"
    path.write_text(str(mlp_pipeline_module(MlpStack(1024, (64, 256, 256), ctas=(2, 2)))))
    proc = run("tilesync.tools.cli", "explain", str(path), "--measure", "--arch", "sm_90a")
    assert proc.returncode == 0, proc.stderr
    assert "dataflow pipeline @mlp on 132 SMs (sm_90a): 2 stages, 1 queue, 4 CTAs" in proc.stdout
    assert "co-residency: co-resident: all 4 blocks are co-resident" in proc.stdout
    assert_one_line_error(run("tilesync.tools.cli", "explain", str(path), "--measure"),
                          "needs target sm_90a")


def test_opt_float_options_take_integers_and_exponents(tmp_path):
    """dataflow-allot-ctas's bandwidths are floats: 3e12 (text to the spec's lexer) and 2 (an
    integer) are numbers for them, as --list-passes shows the default 3000000000000.0."""
    empty = tmp_path / "empty.mlir"
    empty.write_text("builtin.module {}\n")
    for value in ("3e12", "2", "3000000000000.0"):
        proc = run("tilesync.tools.opt", str(empty), "-p",
                   f"dataflow-allot-ctas{{dram_bytes_per_s={value}}}")
        assert proc.returncode == 0, proc.stderr


def test_a_list_option_given_something_else_is_one_line_in_plain_words(tmp_path):
    """sync-one-launch{stages=...} takes stage names; a bad value or an unknown stage is one
    line and exit 1 (the list described as a list of strings)."""
    empty = tmp_path / "empty.mlir"
    empty.write_text("builtin.module {}\n")
    assert_one_line_error(run("tilesync.tools.opt", str(empty), "-p", "sync-one-launch{stages=1}"),
                          "option 'stages' takes a comma-separated list of strings, got '1'")
    assert_one_line_error(run("tilesync.tools.opt", str(empty), "-p",
                              "sync-one-launch{stages=nope}"),
                          "sync-one-launch: no stage named nope")
