"""`tilesync-opt`: xDSL's opt driver with tilesync's dialects, passes and the llvm/ptx targets.

    tilesync-opt prog.mlir -p tilesync-lower-to-llvm -t ptx{arch=sm_90a}

Bad input never ends in a traceback: the diagnostic (with its source location) goes to stderr
and the exit code is 1. Set TILESYNC_TRACEBACK=1 to see the Python traceback of a failure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from tilesync.dialects import get_all_dialects
from tilesync.transforms import get_all_passes


def _gpu_modules(module: ModuleOp) -> list[gpu.ModuleOp]:
    found = [op for op in module.walk() if isinstance(op, gpu.ModuleOp)]
    if not found:
        raise DiagnosticException("no gpu.module to translate (lower the program first)")
    return found


@dataclass(frozen=True)
class LLVMTarget(Target):
    """`-t llvm`: LLVM IR of each (lowered) gpu.module."""

    name = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from tilesync.lowering.llvm_to_llvmlite import translate_to_llvm_ir

        for gmod in _gpu_modules(module):
            output.write(f"; gpu.module @{gmod.sym_name.data}\n")
            output.write(translate_to_llvm_ir(gmod))


@dataclass(frozen=True)
class PTXTarget(Target):
    """`-t ptx{arch=sm_90}`: PTX of each (lowered) gpu.module for a target of
    tilesync.contract.TARGETS (sm_80, sm_90, sm_90a)."""

    name = "ptx"
    arch: str = "sm_90"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from tilesync.lowering.llvm_to_llvmlite import translate_to_llvm_ir
        from tilesync.lowering.ptx import llvm_ir_to_ptx

        for gmod in _gpu_modules(module):
            output.write(f"// gpu.module @{gmod.sym_name.data}\n")
            output.write(llvm_ir_to_ptx(translate_to_llvm_ir(gmod), arch=self.arch))


class TilesyncOptMain(xDSLOptMain):
    version_format = "tilesync-opt built on xdsl {xdsl_version}"

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser):
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument("--analyze", action="store_true",
                                help="print the wave model of the program (after the passes) "
                                     "instead of the program")
        arg_parser.add_argument("--sms", type=int, default=132, help="SMs for --analyze")

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.args.analyze:
            from tilesync.tools.explain import explain

            return explain(prog, sms=self.args.sms) + "\n"
        return super().output_resulting_program(prog)

    def register_all_targets(self):
        super().register_all_targets()
        self.available_targets["llvm"] = lambda: LLVMTarget
        self.available_targets["ptx"] = lambda: PTXTarget


def _one_line(err: BaseException) -> str:
    text = str(err).strip()
    return text if text else type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    try:
        TilesyncOptMain(description="tilesync modular optimizer driver", args=argv).run()
    except (ParseError, DiagnosticException, VerifyException) as err:
        if os.environ.get("TILESYNC_TRACEBACK"):
            raise
        print(f"tilesync-opt: error: {_one_line(err)}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as err:  # a user must never see a traceback; keep the message whole
        if os.environ.get("TILESYNC_TRACEBACK"):
            raise
        print(f"tilesync-opt: error: {type(err).__name__}: {_one_line(err)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
