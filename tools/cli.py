"""`tilesync`: compile, demo and bench. Errors are one line on stderr and exit 1; Ctrl-C is
"tilesync: interrupted" and exit 130; a reader of the output that goes away, exit 141."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from tilesync.contract import DEFAULT_TARGET, TARGETS, CompileError
from tilesync.tools.errors import (
    STANDARD_STREAM,
    non_negative_int,
    positive_float,
    positive_int,
    source_name,
)

EXAMPLES = ("copy_chain.mlir", "synthetic_chain.mlir")


def _compile(args: argparse.Namespace) -> int:
    import tilesync
    from tilesync.api import check_target, default_pipeline_for, lower, parse

    text = read_source(args.file)
    name = source_name(args.file)
    if args.emit == "mlir":  # the IR after the pipeline: nothing is translated to PTX
        check_target(args.target)
        module = parse(text, name=name)
        pipeline = args.pipeline or default_pipeline_for(module)
        _, seconds = lower(module, pipeline)
        out = str(module) + "\n"
    else:
        validate = args.emit == "ptx" if args.validate is None else args.validate
        program = tilesync.compile(text, pipeline=args.pipeline, target=args.target,
                                   validate=validate, filename=name)
        seconds = program.pass_seconds
        if args.emit == "ptx":
            out = "".join(program.ptx_by_module.values())
        else:
            out = "".join(program.llvm_ir_by_module.values())
    if args.output and args.output != STANDARD_STREAM:
        write_atomically(args.output, out)
    else:
        sys.stdout.write(out)
    if args.time_passes:
        for name, sec in seconds.items():
            print(f"{name:<32} {sec * 1e3:8.2f} ms", file=sys.stderr)
    return 0


def read_source(path: str) -> str:
    """The text of the file `path`, or of standard input for `-` (diagnostics name it
    `source_name(path)`)."""
    from tilesync.api import decode_source

    try:
        data = sys.stdin.buffer.read() if path == STANDARD_STREAM else Path(path).read_bytes()
    except OSError as err:
        raise CompileError(f"cannot read {path}: {err.strerror or err}") from None
    return decode_source(data, source_name(path))


def write_atomically(path: str, text: str) -> None:
    """Write `text` to the file `path` through a temporary file renamed over it, so that a
    failed or interrupted run leaves the file as it was (a device or pipe is written as is)."""
    target = Path(path)
    if target.exists() and not target.is_file():
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
        return
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask()
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as err:
        raise CompileError(f"cannot write {path}: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temporary, mode)  # mkstemp's 0600 would hide the output from others
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _demo(args: argparse.Namespace) -> int:
    from importlib import resources

    import tilesync
    from tilesync.lowering.ptx import validate_ptx
    from tilesync.runtime.device import gpu_available

    for name in EXAMPLES:
        text = resources.files("tilesync").joinpath("examples", name).read_text()
        start = time.perf_counter()
        program = tilesync.compile(text, target="sm_90")
        seconds = time.perf_counter() - start
        info = validate_ptx(program.ptx, "sm_90")
        print(f"{name}: compiled to {len(program.ptx.splitlines())} lines of PTX for sm_90 in "
              f"{seconds:.2f} s; kernels {', '.join(program.kernels)}; nvJitLink accepts it"
              + (f" ({info.registers})" if getattr(info, "registers", None) else ""))
    ok, reason = gpu_available()
    if not ok:
        print(f"no GPU here ({reason}): compiled and validated only; run `make demo` on a "
              "machine with an NVIDIA GPU to execute the copy chain.")
        return 0
    from tilesync.bench.experiments import copy_chain
    from tilesync.bench.report import copy_table

    result = copy_chain(warmup=3, reps=10)
    print(copy_table(result))
    print("every element of the consumer's output matched the input in both modes.")
    return 0


def _attention_modes(args: argparse.Namespace) -> tuple[str, ...] | None:
    """`--modes`, checked: attention's, for the attention bench only."""
    if not args.modes:
        return None
    if args.experiment != "attention":
        raise CompileError(f"--modes selects attention's modes; not for bench {args.experiment}")
    from tilesync.bench.attention import MODES

    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        raise CompileError(f"unknown attention mode {', '.join(unknown)}: the modes are "
                           f"{', '.join(MODES)}")
    return tuple(args.modes)


def _bench(args: argparse.Namespace) -> int:
    from tilesync.bench import experiments, report
    from tilesync.runtime.device import get_device, require_gpu

    modes = _attention_modes(args)  # a bad mode is refused before any GPU work
    _check_out_directory(args.out)  # ... and an --out no result could be written to
    if args.experiment == "compile":  # compile times mean something without a GPU too
        from tilesync.runtime.device import gpu_available

        ok, reason = gpu_available()
        device = get_device().to_dict() if ok else {"name": "cpu", "why": reason}
    else:
        require_gpu()
        device = get_device().to_dict()
    out = Path(args.out)
    which = ["copy", "waves", "stages"] if args.experiment == "all" else [args.experiment]
    for name in which:
        if name == "compile":
            from tilesync.bench import compile_time

            result = compile_time.compile_benchmarks(args.models or compile_time.NAMES,
                                                     fresh=args.fresh,
                                                     torch_compile=not args.no_torch_compile)
            table = compile_time.compile_table(result)
        elif name == "copy":
            sizes = [experiments.copy_chain(warmup=args.warmup, reps=args.reps, tile_elems=t)
                     for t in args.copy_tiles]
            result = {"experiment": "copy_chain", "sizes": sizes}
            table = "\n\n".join(report.copy_table(r) for r in sizes)
        elif name == "waves":
            result = experiments.synthetic_waves(warmup=args.warmup, reps=args.reps,
                                                 tile_us=args.tile_us)
            table = report.waves_table(result)
        elif name == "stages":
            from tilesync.bench import stages

            result = stages.stage_chains(tile_us=args.tile_us, warmup=args.warmup,
                                         reps=args.reps)
            table = stages.stage_table(result)
        elif name == "mlp":
            from tilesync.bench import mlp

            result = mlp.mlp_benchmarks(ms=tuple(args.ms or mlp.BATCHES), warmup=args.warmup,
                                        reps=args.reps)
            table = mlp.mlp_table(result)
        elif name == "conv":
            from tilesync.bench import conv

            result = conv.conv_benchmarks(warmup=args.warmup, reps=args.reps)
            table = conv.conv_table(result)
        elif name == "attention":
            from tilesync.bench import attention

            shapes, default_modes = attention.SHAPES, attention.MODES
            if args.causal:
                shapes = attention.CAUSAL_SHAPES
            if args.decode:  # the chain reads k from QKV alone: the fused program's modes
                shapes, default_modes = attention.DECODE_SHAPES, attention.FUSED_MODES
            result = attention.attention_benchmarks(
                shapes, warmup=args.warmup, reps=args.reps, modes=modes or default_modes)
            table = attention.attention_table(result)
        elif name == "torch":
            from tilesync.bench import torch_models

            result = torch_models.torch_benchmarks(args.models or torch_models.NAMES,
                                                   warmup=args.warmup, reps=args.reps,
                                                   rows=args.rows)
            table = torch_models.torch_table(result)
        elif name == "dataflow-mlp":
            from tilesync.bench import dataflow_mlp

            result = dataflow_mlp.mlp_stack_benchmarks(warmup=min(args.warmup, 5),
                                                       reps=min(args.reps, 30))
            table = dataflow_mlp.stack_table(result)
        elif name == "dataflow":
            from tilesync.bench import dataflow

            result = dataflow.queue_bandwidth(warmup=min(args.warmup, 3),
                                              reps=min(args.reps, 10))
            table = dataflow.queue_table(result)
        else:
            from tilesync.bench import kernels

            result = kernels.kernel_benchmarks(quick=args.quick, warmup=args.warmup,
                                               reps=args.reps)
            table = kernels.kernels_table(result)
        from tilesync.bench.report import tilesync_commit

        result["device"] = device
        result["tilesync_commit"] = tilesync_commit()
        print(table)
        stem = name if name in ("kernels", "mlp", "conv", "attention", "torch", "dataflow",
                                "dataflow-mlp", "compile") else f"spine-{name}"
        if name == "torch" and args.rows:
            stem = "torch-rows"
        if name == "attention" and args.causal:
            stem = "attention-causal"
        if name == "attention" and args.decode:
            stem = "attention-decode"
        if name == "attention" and modes:  # some modes: not the record of every mode
            stem += "-modes"
        programs = None
        if name in ("mlp", "conv", "attention"):  # each row's recorded mode choice (explain)
            from tilesync.bench.mode_choice import write_programs

            programs = write_programs(result, out, stem)
        path = report.write_json(result, out, stem)
        if name == "kernels":
            from tilesync.bench.kernels import kernels_plot

            png = kernels_plot(result, out, stem)
        elif name == "mlp":
            from tilesync.bench.mlp import mlp_plot

            png = mlp_plot(result, out, stem)
        elif name == "conv":
            from tilesync.bench.conv import conv_plot

            png = conv_plot(result, out, stem)
        elif name == "attention":
            from tilesync.bench.attention import attention_plot

            png = attention_plot(result, out, stem)
        elif name == "torch":
            from tilesync.bench.torch_models import torch_plot

            png = torch_plot(result, out, stem)
        elif name == "dataflow-mlp":
            from tilesync.bench.dataflow_mlp import stack_plot

            png = stack_plot(result, out, stem)
        elif name == "compile":
            from tilesync.bench.compile_time import compile_plot

            png = compile_plot(result, out, stem)
        elif name == "dataflow":
            from tilesync.bench.dataflow import queue_plot

            png = queue_plot(result, out, stem)
        else:
            png = report.plot(result, out, stem)
        print(f"wrote {path}" + (f" and {png}" if png else "")
              + (f"; the rows' programs with their mode choice in {programs}/" if programs
                 else ""))
    return 0


def _check_out_directory(out: str) -> None:
    """`bench --out`: made (as the results would make it) and written to once, before a
    benchmark runs for minutes; a CompileError, one line, where that fails."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise CompileError(f"--out {out} is a file: it names the directory the results go to")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        raise CompileError(f"--out {out}: cannot write results there: "
                           f"{err.strerror or err}") from None


def _explain(args: argparse.Namespace) -> int:
    from tilesync.api import (
        annotate_resources,
        default_pipeline_for,
        no_kernel_error,
        parse,
        to_stage_program,
    )
    from tilesync.tools.explain import explain

    module = parse(read_source(args.file), name=source_name(args.file))
    to_stage_program(module)  # a graph-level program: the stage program compile makes first
    # occupancy from the kernels `tilesync compile -t ARCH` would emit; a program without a
    # kernel has none to measure (its compile's refusal named no file: "<input>")
    if args.measure and no_kernel_error(module) is None:
        annotate_resources(module, args.arch, pipeline=default_pipeline_for(module))
    print(explain(module, sms=args.sms, arch=args.arch))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tilesync", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="compile MLIR in tilesync's dialects to PTX")
    c.add_argument("file", help="the MLIR program (- reads standard input)")
    c.add_argument("-p", "--pipeline", default=None, help="pass pipeline (default: full)")
    c.add_argument("-t", "--target", default=DEFAULT_TARGET, help=", ".join(TARGETS))
    c.add_argument("--emit", choices=("ptx", "llvm", "mlir"), default="ptx")
    c.add_argument("--validate", action=argparse.BooleanOptionalAction, default=None,
                   help="assemble the PTX with nvJitLink (the default for --emit ptx)")
    c.add_argument("--time-passes", action="store_true")
    c.add_argument("-o", "--output", help="write here instead of standard output (-)")
    c.set_defaults(run=_compile)

    e = sub.add_parser("explain", help="the wave model of a stage program (paper Table I)")
    e.add_argument("file", help="the MLIR program (- reads standard input)")
    e.add_argument("--sms", type=positive_int, default=132)
    e.add_argument("--arch", default="sm_90")
    e.add_argument("--measure", action="store_true",
                   help="compile the kernels for --arch and take registers/shared memory "
                        "from nvJitLink")
    e.set_defaults(run=_explain)

    d = sub.add_parser("demo", help="compile the examples; run the copy chain on a GPU")
    d.set_defaults(run=_demo)

    b = sub.add_parser("bench", help="benchmarks on a GPU: tables, JSON and PNG")
    b.add_argument("experiment", nargs="?",
                   choices=("copy", "waves", "stages", "kernels", "mlp", "conv", "attention",
                            "torch", "dataflow", "dataflow-mlp", "compile", "all"),
                   default="all")
    b.add_argument("--quick", action="store_true", help="kernels: a subset of the shapes")
    b.add_argument("--models", nargs="+", default=None,
                   help="torch, compile: example models (default: all of "
                        "examples/torch_models.py)")
    b.add_argument("--fresh", type=positive_int, default=3,
                   help="compile: fresh processes per model, cache state and tool")
    b.add_argument("--no-torch-compile", action="store_true",
                   help="compile: time tilesync's compiles only")
    b.add_argument("--rows", type=positive_int, nargs="+", default=None,
                   help="torch: a sweep, each model on (rows, features) inputs of each count "
                        "(saved as torch-rows-<device>)")
    attention_rows = b.add_mutually_exclusive_group()  # one set of attention rows a run
    attention_rows.add_argument("--decode", action="store_true",
                   help="attention: the decoding rows instead (one new token a sequence after "
                        "KV caches of 512-4096; the fused program's modes), saved as "
                        "attention-decode-<device>")
    attention_rows.add_argument("--causal", action="store_true",
                   help="attention: the causal rows instead (GPT-2 small; GPT-3 and LLaMA heads "
                        "under 8-way TP), saved as attention-causal-<device>")
    b.add_argument("--modes", nargs="+", default=None,
                   help="attention: only these modes (default: all, the chain's and the "
                        "fused: ones), saved as attention[-causal]-modes-<device>")
    b.add_argument("--ms", type=positive_int, nargs="+", default=None,
                   help="mlp: the batches (default 64 256 512 1024 2048)")
    b.add_argument("--out", default="bench/results")
    b.add_argument("--warmup", type=non_negative_int, default=10)
    b.add_argument("--reps", type=positive_int, default=50)
    b.add_argument("--copy-tiles", type=positive_int, nargs="+", default=[8192, 65536],
                   help="floats per tile of the copy chain (one run each)")
    b.add_argument("--tile-us", type=positive_float, default=50.0,
                   help="tile duration (waves)")
    b.set_defaults(run=_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    from tilesync.tools.errors import (
        check_environment,
        flushed,
        interrupted,
        output_closed,
        report,
    )

    tool = "tilesync"
    try:
        args = build_parser().parse_args(argv)
        tool = f"tilesync {args.command}"
        check_environment()
        return flushed(args.run(args))
    except KeyboardInterrupt as err:
        return interrupted("tilesync", err)
    except BrokenPipeError as err:
        return output_closed(err)
    except SystemExit:
        raise
    except Exception as err:  # one readable line, never a traceback (TILESYNC_TRACEBACK=1 shows it)
        return report(tool, err)


if __name__ == "__main__":
    sys.exit(main())

