"""The front doors on inputs a newcomer tried: Ctrl-C, nothing to compile, an --out that is a
file, a dependency cycle under explain, a path given as a str, an -o that must survive a
failure, random bytes, targets tilesync has no use for, --disable-verify before a pass,
argument errors of the Python API, `-` for standard input and output, a reader of the output
that goes away and bench's numbers. Each is one line (exit 1, or 130 for Ctrl-C; argparse's usage
and exit 2 for an argument; silence and 141 where the reader went away), never a traceback and
never exit 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from io import BytesIO, TextIOWrapper
from pathlib import Path

import pytest
from cli_runs import one_line, run_cli

import tilesync
from tilesync import CompileError, VerifyError
from tilesync.tools import cli, fuzz, opt

ROOT = Path(__file__).resolve().parents[3]
COPY = ROOT / "examples" / "copy_chain.mlir"
MLP = ROOT / "examples" / "gpt3_mlp_sync.mlir"
GRAPH_LEVEL = ROOT / "test" / "filecheck" / "tools" / "compile_graph_level.mlir"
NO_KERNEL = "there is no kernel to compile (tilesync compiles the gpu.func kernels of a gpu.module)"


run = run_cli


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# --- 1. Ctrl-C -------------------------------------------------------------------------------


def _interrupt(*_args, **_kwargs):
    raise KeyboardInterrupt


def test_ctrl_c_in_tilesync_is_one_line_and_exit_130(monkeypatch):
    monkeypatch.setattr(cli, "_compile", _interrupt)
    status, _, err = run(cli.main, ["compile", str(COPY)])
    assert status == 130 and one_line(err) == "tilesync: interrupted"


def test_ctrl_c_in_tilesync_opt_is_one_line_and_exit_130(monkeypatch):
    monkeypatch.setattr(opt.TilesyncOptMain, "run", _interrupt)
    status, _, err = run(opt.main, [str(COPY)])
    assert status == 130 and one_line(err) == "tilesync-opt: interrupted"


def test_traceback_switch_shows_the_interrupt(monkeypatch):
    monkeypatch.setattr(cli, "_compile", _interrupt)
    monkeypatch.setenv("TILESYNC_TRACEBACK", "1")
    with pytest.raises(KeyboardInterrupt):
        cli.main(["compile", str(COPY)])


@pytest.mark.parametrize("tool, argv, line", [
    ("cli", ["explain", "/dev/stdin"], "tilesync: interrupted"),
    ("opt", [], "tilesync-opt: interrupted"),  # no file: it reads standard input
])
def test_sigint_while_reading_input(tool, argv, line):
    """A real SIGINT while the tool waits for its input (a pipe nobody writes). The child takes
    Python's own SIGINT handler first: a shell that starts the tests in the background has its
    children ignore SIGINT, and the tool then reads its input's end and exits 0."""
    script = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
              f"from tilesync.tools import {tool}; print('ready', flush=True); "
              f"sys.exit({tool}.main({argv!r}))")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(1.0)  # into main, blocked reading standard input
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and one_line(err) == line


# --- 2. nothing to compile -------------------------------------------------------------------


@pytest.mark.parametrize("name, text, what", [
    ("empty.mlir", "", "the program is empty"),
    ("hostfn.mlir", "func.func @f(%x: f32) -> f32 {\n  %0 = arith.addf %x, %x : f32\n"
                    "  func.return %0 : f32\n}\n",
     "the program has no gpu.module (only host code)"),
])
@pytest.mark.parametrize("argv", [["--emit", "ptx"], ["--emit", "llvm"]])
def test_compile_refuses_a_program_without_kernels(tmp_path, name, text, what, argv):
    path = write(tmp_path, name, text)
    status, out, err = run(cli.main, ["compile", str(path), *argv])
    assert status == 1 and out == ""
    assert one_line(err) == f"{path}:1:1: error: {what}: {NO_KERNEL}"


def test_api_compile_of_nothing_is_an_error():
    with pytest.raises(CompileError, match="the program is empty: there is no kernel"):
        tilesync.compile("")


def test_opt_says_why_there_is_nothing_to_translate(tmp_path):
    host = write(tmp_path, "host.mlir", "func.func @f() {\n  func.return\n}\n")
    status, _, err = run(opt.main, [str(host), "-t", "ptx"])
    assert status == 1
    assert one_line(err) == f"{host}:1:1: error: the program has no gpu.module (only host " \
                            f"code): {NO_KERNEL}"
    status, _, err = run(opt.main, [str(GRAPH_LEVEL), "-t", "llvm"])
    assert status == 1 and "has no gpu.module yet" in one_line(err) and \
        "graph-to-stages" in err


# --- 3. bench --out --------------------------------------------------------------------------


def _never(*_args, **_kwargs):
    raise AssertionError("the benchmark ran although --out was unusable")


@pytest.mark.parametrize("out, message", [
    ("README.md", "--out README.md is a file: it names the directory the results go to"),
    ("README.md/sub", "--out README.md/sub: cannot write results there: Not a directory"),
])
def test_bench_out_is_checked_before_any_work(monkeypatch, out, message):
    from tilesync.bench import compile_time

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(compile_time, "compile_benchmarks", _never)
    status, _, err = run(cli.main, ["bench", "compile", "--models", "llama_mlp", "--fresh", "1",
                                    "--no-torch-compile", "--out", out])
    assert status == 1 and one_line(err) == f"tilesync bench: error: {message}"


def test_bench_records_the_commit(monkeypatch):
    from tilesync.bench.report import tilesync_commit

    monkeypatch.setenv("TILESYNC_COMMIT", "abc1234")
    assert tilesync_commit() == "abc1234"
    monkeypatch.delenv("TILESYNC_COMMIT")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    expected = head.stdout.strip() if head.returncode == 0 else "unknown"
    assert tilesync_commit() == expected


# --- 4. explain ------------------------------------------------------------------------------


def test_explain_refuses_a_dependency_cycle_as_compile_does(tmp_path):
    line = "  sync.dependency @gemm2 -> @gemm1 operand 0 tiles (d0, d1)[s0] -> (d0, s0) " \
           "forall s0 in [0, 16)\n"
    from tilesync.api import parse
    from tilesync.tools.explain import explain

    text = MLP.read_text().replace("  sync.launch @gemm1", line + "  sync.launch @gemm1", 1)
    path = write(tmp_path, "cycle.mlir", text)
    status, out, err = run(cli.main, ["explain", str(path)])
    assert status == 1 and out == ""
    assert one_line(err).startswith(f"{path}:113:3: error: sync-verify: the dependencies form "
                                    "a cycle @gemm1 -> @gemm2 -> @gemm1")
    with pytest.raises(CompileError, match="form a cycle @gemm1 -> @gemm2 -> @gemm1"):
        tilesync.compile(text)  # (sync-insert-wait-kernel refuses it first there)
    with pytest.raises(VerifyError):
        explain(parse(text))
    status, _, err = run(opt.main, [str(path), "--analyze"])
    assert status == 1 and "form a cycle" in one_line(err)


def test_explain_runs_the_graph_passes_first():
    status, out, err = run(cli.main, ["explain", str(GRAPH_LEVEL)])
    assert status == 0, err
    assert "stage @gemm1: grid" in out and "stage @gemm2: grid" in out
    assert "no sync.stage or dataflow.pipeline" not in out


def test_explain_sms_must_be_positive():
    status, _, err = run(cli.main, ["explain", str(MLP), "--sms", "0"])
    assert status == 2 and "argument --sms: expected a positive integer, got 0" in err
    assert "internal error" not in err and "Traceback" not in err
    from tilesync.api import parse
    from tilesync.tools.explain import explain

    with pytest.raises(CompileError, match="sms must be a positive integer, got 0"):
        explain(parse(MLP.read_text()), sms=0)


# --- 5. a path as a str ----------------------------------------------------------------------


def test_compile_reads_a_str_naming_a_mlir_file(monkeypatch):
    monkeypatch.chdir(ROOT)
    program = tilesync.compile("examples/copy_chain.mlir")
    assert set(program.kernels) == {"producer", "consumer"}
    with pytest.raises(CompileError) as info:
        tilesync.compile("examples/no_such_program.mlir")
    assert str(info.value) == \
        "cannot read examples/no_such_program.mlir: No such file or directory"


def test_a_str_path_names_its_file_in_diagnostics(tmp_path):
    path = write(tmp_path, "bad.mlir", "builtin.module {\n  %x = arith.addi\n}\n")
    with pytest.raises(CompileError) as info:
        tilesync.compile(str(path))
    assert info.value.location is not None and info.value.location.file == str(path)


# --- 6. the fuzzer judges what the user sees -------------------------------------------------

# xDSL's ValueError for the out-of-range integer is in the cause chain (the parser words it):
# the user sees a located diagnostic, which the fuzzer had counted as a traceback.
OUT_OF_RANGE = "func.func @f() {\n  %c = arith.constant dense<4294967296> : vector<2xi32>\n" \
               "  func.return\n}\n"


def test_a_worded_xdsl_value_error_is_a_diagnostic():
    with pytest.raises(CompileError) as info:
        tilesync.api.parse(OUT_OF_RANGE, name="x.mlir")
    assert isinstance(info.value.__cause__.__cause__, ValueError)
    kind, _, message = fuzz.classify(info.value)
    assert kind == "diagnostic" and message.startswith("x.mlir:2:3: Integer value 4294967296")
    assert [o.kind for o in fuzz.run_pipelines(OUT_OF_RANGE, "x.mlir")] == ["diagnostic"]


def _buggy_runner(text: str, name: str):
    """A pass with a real bug (a KeyError that escapes), under the campaign's machinery."""
    from tilesync import api

    module = api.parse(COPY.read_text(), name=name)
    try:
        {}["grid"]
    except KeyError as err:
        try:
            raise api.compile_error(err, module, "sync-verify") from err
        except Exception as raised:
            kind, site, message = fuzz.classify(raised)
            yield fuzz.Outcome("sync", kind, site, message)


def test_a_real_traceback_is_still_counted():
    summary = fuzz.fuzz(seconds=60, seed=1, inputs=2, workers=1, runner=_buggy_runner)
    (failure,) = summary.failures.values()
    assert failure.kind == "traceback" and failure.count == 2
    assert failure.site.startswith("test/python/tools/test_cli_robustness.py:")
    assert failure.site.endswith("KeyError") and "internal error in sync-verify" in \
        failure.message


def test_a_bug_worded_with_a_location_is_still_a_traceback():
    from tilesync.contract import SourceLocation

    try:
        try:
            [][0]
        except IndexError as err:
            raise CompileError("IR after p does not verify: IndexError: list index out of "
                               "range", SourceLocation("x.mlir", 1, 1)) from err
    except CompileError as raised:
        kind, site, _ = fuzz.classify(raised)
    assert kind == "traceback" and site.endswith("IndexError")


# --- 7. -o survives a failure ----------------------------------------------------------------


def test_opt_output_file_is_kept_when_the_run_fails(tmp_path):
    bad = write(tmp_path, "syntax.mlir", "builtin.module {\n  %x = arith.addi\n}\n")
    keep = write(tmp_path, "out.mlir", "KEEP\n")
    status, _, err = run(opt.main, [str(bad), "-o", str(keep)])
    assert status == 1 and one_line(err).startswith(f"{bad}:")
    assert keep.read_text() == "KEEP\n"
    status, _, err = run(opt.main, [str(COPY), "-o", str(keep)])
    assert status == 0, err
    assert keep.read_text().startswith("builtin.module")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary


def test_compile_output_file_is_kept_when_the_run_fails(tmp_path):
    bad = write(tmp_path, "syntax.mlir", "builtin.module {\n  %x = arith.addi\n}\n")
    keep = write(tmp_path, "out.ptx", "KEEP\n")
    status, _, _ = run(cli.main, ["compile", str(bad), "-o", str(keep)])
    assert status == 1 and keep.read_text() == "KEEP\n"


# --- 8. internal errors and junk -------------------------------------------------------------


def test_random_bytes_are_a_located_error(tmp_path):
    garbage = write(tmp_path, "garbage.mlir", b"ab\xe4\x00\xff\n")
    expected = (f"{garbage}:1:3: error: not UTF-8 text: byte 0xe4 cannot start or continue a "
                "character (an MLIR program is UTF-8 text)")
    for main, argv in [(opt.main, [str(garbage)]), (cli.main, ["compile", str(garbage)])]:
        status, _, err = run(main, argv)
        assert status == 1 and one_line(err) == expected


@pytest.mark.parametrize("target", ["x86-asm", "riscv-asm", "arm-asm", "wat", "csl", "wgsl"])
def test_targets_tilesync_has_no_use_for_are_not_offered(target):
    status, out, err = run(opt.main, [str(COPY), "-t", target])
    assert status == 2 and out == "" and "invalid choice" in err and "Traceback" not in err
    assert "(choose from llvm, mlir, ptx)" in err


def test_an_unlowered_module_under_t_llvm_is_located():
    status, _, err = run(opt.main, [str(COPY), "-t", "llvm"])
    assert status == 1
    assert one_line(err) == (f"{COPY}:8:5: error: gpu.module @copy_kernels is not lowered to "
                             "the llvm dialect (a 'gpu.func' remains): end the pipeline with "
                             "tilesync-lower-to-llvm, or emit MLIR instead of PTX")


def test_disable_verify_still_verifies_the_input_of_a_pass(tmp_path):
    text = MLP.read_text().replace("grid = array<i64: 8, 48>", "grid = array<i64: 0, 48>", 1)
    path = write(tmp_path, "grid0.mlir", text)
    status, _, err = run(opt.main, [str(path), "--disable-verify", "-p",
                                    "sync-generate-policies"])
    assert status == 1
    assert one_line(err) == f"{path}:110:3: error: sync.stage: grid extents must be positive, " \
                            "got (0, 48)"
    # without a pass it prints the program as it is: what --disable-verify is for
    status, out, err = run(opt.main, [str(path), "--disable-verify"])
    assert status == 0 and "array<i64: 0, 48>" in out, err


def test_disable_verify_does_not_outlive_its_run(tmp_path):
    """xDSL turns attribute verification off for the process; a later run verifies again."""
    from xdsl.dialects.builtin import IntegerAttr, i32

    run(opt.main, [str(COPY), "--disable-verify"])
    with pytest.raises(Exception, match="out of range"):
        IntegerAttr(2**40, i32)


# --- 10. the Python API's argument errors ----------------------------------------------------


def test_runtime_programs_refuse_what_is_not_a_compiled_program():
    from tilesync.runtime.dataflow import DataflowProgram
    from tilesync.runtime.program import StageProgram

    with pytest.raises(CompileError, match=r"StageProgram takes a CompiledProgram .* got str"):
        StageProgram("x")
    with pytest.raises(CompileError, match="DataflowProgram takes a CompiledProgram"):
        DataflowProgram(42)
    with pytest.raises(CompileError, match=r"the program has no dataflow\.pipeline; name one"):
        DataflowProgram(tilesync.compile(COPY))


def test_torch_compile_checks_its_arguments():
    torch = pytest.importorskip("torch")
    import tilesync.frontend.torch as tt

    model = torch.nn.Linear(64, 64)
    with pytest.raises(tt.UnsupportedError, match="missing a required argument: 'input'"):
        tt.compile(model, [])
    with pytest.raises(tt.UnsupportedError, match=r"takes a torch\.nn\.Module or a function of "
                                                  r"tensors, got int"):
        tt.compile(42, [torch.zeros(2, 64)])
    with pytest.raises(tt.UnsupportedError, match="too many positional arguments"):
        tt.compile(model, [torch.zeros(2, 64), torch.zeros(2, 64)])


def test_api_functions_taking_a_module_refuse_anything_else():
    """Program text or None where a ModuleOp belongs: a CompileError naming the function, not
    an AttributeError from inside a pass."""
    from tilesync import api
    from tilesync.tools.explain import explain

    text = COPY.read_text()
    calls = {"lower": lambda: api.lower(text), "sync_passes_for": lambda: api.sync_passes_for(None),
             "to_stage_program": lambda: api.to_stage_program(text),
             "gpu_modules": lambda: api.gpu_modules(text),
             "kernel_signatures": lambda: api.kernel_signatures(text),
             "annotate_resources": lambda: api.annotate_resources(text),
             "default_pipeline_for": lambda: api.default_pipeline_for(text),
             "explain": lambda: explain(text)}
    for name, call in calls.items():
        with pytest.raises(CompileError, match=rf"^{name} takes a ModuleOp \(tilesync\.api\.parse "
                                               r"gives one\), got (str|NoneType)$"):
            call()


def test_explain_measures_nothing_in_a_program_without_kernels(tmp_path):
    """--measure on an empty file: the report, not compile's refusal named "<input>:1:1"."""
    path = write(tmp_path, "empty.mlir", "")
    status, out, err = run(cli.main, ["explain", str(path), "--measure"])
    assert status == 0, err
    assert "no sync.stage or dataflow.pipeline in this module" in out


def test_explain_raises_compile_errors_for_a_bad_arch_or_occupancy():
    from tilesync.api import parse
    from tilesync.tools.explain import explain

    with pytest.raises(CompileError, match=r"^unknown target 'sm_100'; choose one of sm_80"):
        explain(parse(MLP.read_text()), arch="sm_100")
    text = MLP.read_text().replace("tile = array<i64: 32, 32, 32>}",
                                   "tile = array<i64: 32, 32, 32>, blocks_per_sm = -2 : i64}", 1)
    with pytest.raises(CompileError) as info:  # was an OpDiagnostic, no TilesyncError
        explain(parse(text, name="mlp.mlir"))
    assert str(info.value) == ("mlp.mlir:110:3: explain: stage @gemm1 has blocks_per_sm = -2: "
                               "it cannot run (a stage runs at least 1 block per SM)")


# --- 11. standard streams --------------------------------------------------------------------


@pytest.mark.parametrize("tool, argv", [
    ("tilesync-opt", [str(MLP)]),
    ("tilesync-opt", ["--list-passes"]),
    ("tilesync", ["compile", str(COPY), "--emit", "mlir"]),
    ("tilesync", ["explain", str(MLP)]),
    ("explain", [str(MLP)]),
])
def test_a_reader_that_goes_away_ends_the_run_silently(tool, argv):
    """`| head -1`: no "internal error: BrokenPipeError" line, exit status 141 (128 + SIGPIPE),
    what a C tool killed by SIGPIPE reports."""
    module = {"tilesync-opt": "opt", "tilesync": "cli", "explain": "explain"}[tool]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        done = subprocess.run([sys.executable, "-m", f"tilesync.tools.{module}", *argv],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.parametrize("main, argv", [(opt.main, [str(COPY)]),
                                        (cli.main, ["compile", str(COPY), "--emit", "mlir"])])
def test_o_dash_is_standard_output(tmp_path, monkeypatch, main, argv):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(main, [*argv, "-o", "-"])
    assert status == 0, err
    assert out.startswith("builtin.module") and list(tmp_path.iterdir()) == []  # no file "-"


@pytest.mark.parametrize("main, argv", [(opt.main, ["-"]), (cli.main, ["compile", "-"]),
                                        (cli.main, ["explain", "-"])])
def test_dash_is_standard_input(monkeypatch, main, argv):
    bad = COPY.read_text().replace("posts = 1>", "posts = 0>", 1)
    monkeypatch.setattr(sys, "stdin", TextIOWrapper(BytesIO(bad.encode())))
    status, _, err = run(main, argv)
    assert status == 1
    assert one_line(err) == "stdin:19:7: error: policy posts must be positive, got 0"


# --- 12. bench's numbers ---------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["--reps", "0"], "argument --reps: expected a positive integer, got 0"),
    (["--warmup", "-1"], "argument --warmup: expected an integer >= 0, got -1"),
    (["mlp", "--ms", "64", "0"], "argument --ms: expected a positive integer, got 0"),
    (["--copy-tiles", "x"], "argument --copy-tiles: expected a positive integer, got 'x'"),
    (["torch", "--rows", "-8"], "argument --rows: expected a positive integer, got -8"),
    (["compile", "--fresh", "0"], "argument --fresh: expected a positive integer, got 0"),
    (["waves", "--tile-us", "-5"], "argument --tile-us: expected a positive number, got -5"),
    (["waves", "--tile-us", "nan"], "argument --tile-us: expected a positive number, got nan"),
])
def test_bench_numbers_are_checked_before_the_gpu(argv, message):
    """Refused as arguments on any machine (they reached the benchmarks on a GPU)."""
    status, out, err = run(cli.main, ["bench", *argv])
    assert status == 2 and out == "" and err.rstrip().endswith(f"error: {message}"), err
    assert "no usable NVIDIA GPU" not in err and "Traceback" not in err
