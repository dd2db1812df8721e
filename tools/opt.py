"""`tilesync-opt`: xDSL's opt driver with tilesync's dialects, passes and the llvm/ptx targets.

    tilesync-opt prog.mlir -p tilesync-lower-to-llvm -t ptx{arch=sm_90a}
    tilesync-opt --list-passes

Bad input never ends in a traceback: one line "file:line:col: error: message" goes to stderr
and the exit code is 1 (a malformed `-p` or `-t` spec is located in "<pipeline>" or
"<target>"); Ctrl-C is "tilesync-opt: interrupted" and exit code 130. Set TILESYNC_TRACEBACK=1
to see the Python traceback of a failure. `-o FILE` is written only when the run succeeds (a
failure leaves FILE as it was); `-` is standard input, `-o -` standard output, and a reader that
goes away ends the run silently with exit code 141. The targets are mlir (the default), llvm
and ptx.

The passes assume verified IR: the input is verified before the first pass even under
`--disable-verify`, which skips only the checks after each pass (and, with no pass, the
input's: for printing IR as it is).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import sys
import time
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from tilesync.compat.verification import verify as verify_ir
from tilesync.contract import TARGETS, CompileError
from tilesync.dialects import get_all_dialects
from tilesync.dialects.locations import LocatingParser, OpDiagnostic, failing_op
from tilesync.lowering.pipeline import (
    describe_type,
    instantiate,
    parse_pipeline_spec,
    spec_syntax_error,
)
from tilesync.tools.errors import (
    STANDARD_STREAM,
    check_environment,
    flushed,
    interrupted,
    output_closed,
    positive_int,
    report,
    source_name,
)
from tilesync.transforms import get_all_passes

# What `-t` offers: xDSL's other targets (x86, RISC-V and Arm assembly, wat, csl, wgsl, mps)
# print dialects a tilesync program never holds.
OFFERED_TARGETS = ("mlir", "llvm", "ptx")


def _gpu_modules(module: ModuleOp) -> list[gpu.ModuleOp]:
    """The gpu.modules to translate (the driver has refused a program without one, naming
    its input: `TilesyncOptMain.output_resulting_program`)."""
    from tilesync.api import gpu_modules

    return gpu_modules(module)


def _llvm_ir(module: ModuleOp, gmod: gpu.ModuleOp) -> str:
    """The LLVM IR of `gmod`; a located CompileError where it is not lowered yet."""
    from tilesync.api import translation_error
    from tilesync.lowering.llvm_to_llvmlite import translate_to_llvm_ir

    try:
        return translate_to_llvm_ir(gmod)
    except Exception as err:
        raise translation_error(module, gmod.sym_name.data, err) from err


@dataclass(frozen=True)
class LLVMTarget(Target):
    """`-t llvm`: LLVM IR of each (lowered) gpu.module."""

    name = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        for gmod in _gpu_modules(module):
            output.write(f"; gpu.module @{gmod.sym_name.data}\n")
            output.write(_llvm_ir(module, gmod))


@dataclass(frozen=True)
class PTXTarget(Target):
    """`-t ptx{arch=sm_90}`: PTX of each (lowered) gpu.module for a target of
    tilesync.contract.TARGETS (sm_80, sm_90, sm_90a), assembled by nvJitLink before it is
    printed (what ptxas would refuse, static shared memory over the limit say, is an error
    with nvJitLink's reason); `validate=false` (or `--no-validate`) skips that."""

    name = "ptx"
    arch: str = "sm_90"
    validate: bool = True

    def __post_init__(self) -> None:
        if self.arch not in TARGETS:
            raise ValueError(f"option 'arch' is one of {', '.join(TARGETS)}, got '{self.arch}'")

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from tilesync.lowering.ptx import llvm_ir_to_ptx

        texts = []
        for gmod in _gpu_modules(module):
            ptx = llvm_ir_to_ptx(_llvm_ir(module, gmod), arch=self.arch)
            if self.validate:
                validate_module_ptx(ptx, self.arch, gmod.sym_name.data)
            texts.append(f"// gpu.module @{gmod.sym_name.data}\n{ptx}")
        output.write("".join(texts))


@dataclass(frozen=True)
class UnvalidatedPTXTarget(PTXTarget):
    """`-t ptx` under `--no-validate`."""

    validate: bool = False


def validate_module_ptx(ptx: str, arch: str, module: str) -> None:
    """nvJitLink assembles the PTX of gpu.module @`module`; a CompileError with its reason
    if it refuses."""
    from tilesync.lowering.ptx import PTXError, validate_ptx

    try:
        validate_ptx(ptx, arch)
    except PTXError as err:
        reason = " ".join(str(err).split())
        raise CompileError(f"the PTX of gpu.module @{module} does not assemble: {reason} "
                           f"(-t ptx{{validate=false}} or --no-validate skips this check)"
                           ) from None


def pass_summary(cls: type[ModulePass]) -> str:
    """The first line of a pass's docstring (dataclasses without one document themselves as
    their signature, which says nothing)."""
    doc = (cls.__doc__ or "").strip()
    if not doc or doc.startswith(f"{cls.__name__}("):
        return ""
    return " ".join(doc.split("\n\n")[0].split()).split(". ")[0].rstrip(".")


def list_passes() -> str:
    """tilesync's passes, one line each, and their options (from the pass dataclasses)."""
    lines = []
    for name, factory in get_all_passes().items():
        cls = factory()
        lines.append(f"{name:<28} {pass_summary(cls)}".rstrip())
        hints = typing.get_type_hints(cls)
        for field in dataclasses.fields(cls):
            if not field.init or field.name == "name":
                continue
            default = field.default
            text = str(default).lower() if isinstance(default, bool) else repr(default)
            shown = "" if default is dataclasses.MISSING or default is None else \
                f" (default {text})"
            lines.append(f"    {field.name}: {describe_type(hints[field.name])}{shown}")
    return "\n".join(lines) + "\n"


class _ListPasses(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(list_passes())
        parser.exit()


class TilesyncOptMain(xDSLOptMain):
    version_format = "tilesync-opt built on xdsl {xdsl_version}"

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        from tilesync.compat.fast_passes import FAST_PASSES

        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)
        # the same pass under xDSL's name as in tilesync.compile's pipelines (lower-affine's
        # mod rounds toward minus infinity there)
        for name, fast in FAST_PASSES.items():
            self.available_passes[name] = lambda fast=fast: fast

    def register_all_frontends(self):
        super().register_all_frontends()
        self.available_frontends["mlir"] = self._parse_mlir

    def _parse_mlir(self, stream: IO[bytes], line_offset: int = 0) -> ModuleOp:
        from tilesync.api import decode_source

        text = decode_source(stream.read(), self.get_input_name())
        parser = LocatingParser(self.ctx, text, self.get_input_name(), line_offset)
        return parser.parse_module(not self.args.no_implicit_module)

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """A file whose extension names no front end (none, `.txt`, a pipe's /dev/fd/N) is
        read as MLIR, as standard input is, not refused as an internal error; `-` is standard
        input."""
        if self.args.input_file == STANDARD_STREAM:
            return sys.stdin.buffer, "mlir"
        stream, extension = super().get_input_stream()
        return stream, extension if extension in self.available_frontends else "mlir"

    def get_input_name(self) -> str:
        return source_name(self.args.input_file or STANDARD_STREAM)

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        if file_extension == "mlir" or file_extension not in self.available_frontends:
            return self._parse_mlir(chunk, start_offset)
        return super().parse_chunk(chunk, file_extension, start_offset)

    def register_all_arguments(self, arg_parser):
        super().register_all_arguments(arg_parser)
        for action in arg_parser._actions:  # xDSL's help lists all ~150 passes on one line
            if "--passes" in action.option_strings:
                action.help = ("pass pipeline, e.g. 'sync-generate-policies,"
                               "tilesync-lower-to-llvm' (--list-passes: tilesync's passes)")
        arg_parser.add_argument("--list-passes", action=_ListPasses,
                                help="list tilesync's passes and their options, then exit")
        arg_parser.add_argument("--analyze", action="store_true",
                                help="print the wave model of the program (after the passes) "
                                     "instead of the program")
        arg_parser.add_argument("--sms", type=positive_int, default=132,
                                help="SMs for --analyze")
        arg_parser.add_argument("--no-validate", action="store_true",
                                help="-t ptx: print the PTX without assembling it with "
                                     "nvJitLink first")

    def setup_pipeline(self):
        """xDSL's pipeline set-up, with `-p` and `-t` errors as located CompileErrors and a
        verification failure located at the op that does not verify."""
        target = parse_spec(self.args.target)
        if target.name in self.available_targets:
            instantiate(self.available_targets[target.name](), target)
        clock = [time.perf_counter()]

        def callback(previous: ModulePass | None, module: ModuleOp,
                     following: ModulePass | None) -> None:
            if self.args.time_passes and previous is not None:
                print(f"Pass {previous.name} took {time.perf_counter() - clock[0]} seconds")
            if _verifies(previous, following, self.args.disable_verify):
                _verify(module, previous)
            if previous and following and self.args.print_between_passes:
                print(f"IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n\n")
            clock[0] = time.perf_counter()

        self.pipeline = parse_pipeline_spec(self.available_passes, self.args.passes, callback)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.args.analyze:
            from tilesync.tools.explain import explain

            return explain(prog, sms=self.args.sms) + "\n"
        if parse_spec(self.args.target).name in ("llvm", "ptx"):
            from tilesync.api import gpu_modules

            gpu_modules(prog, self.get_input_name())  # none: say why, naming the input
        return super().output_resulting_program(prog)

    def register_all_targets(self):
        super().register_all_targets()
        self.available_targets["llvm"] = lambda: LLVMTarget
        self.available_targets["ptx"] = lambda: (
            UnvalidatedPTXTarget if getattr(self.args, "no_validate", False) else PTXTarget)
        for name in list(self.available_targets):
            if name not in OFFERED_TARGETS:
                del self.available_targets[name]

    def prepare_output(self) -> IO[str]:
        """`-o FILE`: a buffer, written to FILE (atomically) once the run succeeded; `-o -`
        is standard output."""
        if self.args.output_file in (None, STANDARD_STREAM):
            return sys.stdout
        self.pending_output = _PendingOutput()
        return self.pending_output

    def run(self) -> None:
        self.pending_output: _PendingOutput | None = None
        super().run()
        if self.pending_output is not None:
            from tilesync.tools.cli import write_atomically

            write_atomically(self.args.output_file, self.pending_output.getvalue())


class _PendingOutput(io.StringIO):
    """The output of a run with `-o`, kept when xDSL's driver closes its stream."""

    def close(self) -> None:
        pass


def _verifies(previous: ModulePass | None, following: ModulePass | None,
              disable_verify: bool) -> bool:
    """Whether the pipeline callback verifies: the input before the first pass always (the
    passes assume verified IR: an unverified grid of 0 made one fail with an IndexError),
    else unless --disable-verify."""
    first_of_some = previous is None and following is not None
    return first_of_some or not disable_verify


def _verify(module: ModuleOp, after: ModulePass | None) -> None:
    try:
        verify_ir(module)
    except Exception as err:
        op = failing_op(module, err)
        text = " ".join(str(err).split()) or type(err).__name__
        where = f"IR after {after.name} does not verify: " if after is not None else ""
        raise OpDiagnostic(where + text, op if op is not None else module) from err


def main(argv: Sequence[str] | None = None) -> int:
    # xDSL's --disable-verify turns attribute verification off for the whole process: back on
    # when this run ends (an in-process caller runs on), and before the parse when a pass
    # runs (the passes assume verified IR).
    post_init = Attribute.__dict__["__post_init__"]
    try:
        check_environment()
        driver = TilesyncOptMain(description="tilesync modular optimizer driver", args=argv)
        if driver.pipeline.passes:
            Attribute.__post_init__ = post_init
        driver.run()
        flushed(0)
    except KeyboardInterrupt as err:
        return interrupted("tilesync-opt", err)
    except BrokenPipeError as err:
        return output_closed(err)
    except SystemExit:
        # xDSL's driver ends --list-passes and its own argument errors with exit(): what they
        # printed is still buffered, and a reader gone away shows only at this flush
        try:
            flushed(0)
        except BrokenPipeError as err:
            return output_closed(err)
        raise
    except ArgSpecParseError as err:  # a BaseException: only `-t` gets here, `-p` is ours
        return report("tilesync-opt", spec_syntax_error(err, "<target>"))
    except CompileError as err:
        return report("tilesync-opt", err)
    except Exception as err:  # a user must never see a traceback
        return report("tilesync-opt", err)
    finally:
        Attribute.__post_init__ = post_init
    return 0


if __name__ == "__main__":
    sys.exit(main())
