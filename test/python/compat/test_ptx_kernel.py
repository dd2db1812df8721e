"""compat.ptx_kernel: `llvm.func ptx_kernel` parses, verifies, prints and reaches LLVM IR as the
NVPTX kernel calling convention; xDSL 0.74 alone does not know the name."""

from __future__ import annotations

import subprocess
import sys

from xdsl.context import Context
from xdsl.dialects import builtin, llvm
from xdsl.parser import Parser

from tilesync.compat.ptx_kernel import PTX_KERNEL_CCONV

KERNEL = """
llvm.func ptx_kernel @k(%p: !llvm.ptr<1>) {
  llvm.return
}
"""


def test_ptx_kernel_round_trips_and_reaches_llvm_ir():
    from tilesync.lowering.llvm_to_llvmlite import translate_to_llvm_ir

    ctx = Context()
    ctx.load_dialect(builtin.Builtin)
    ctx.load_dialect(llvm.LLVM)
    module = Parser(ctx, KERNEL).parse_module()
    module.verify()
    (func,) = module.ops
    assert isinstance(func, llvm.FuncOp) and func.CConv.convention.data == PTX_KERNEL_CCONV
    assert "llvm.func ptx_kernel @k" in str(module)
    assert 'define ptx_kernel void @"k"' in translate_to_llvm_ir(module)


def test_xdsl_alone_still_lacks_the_calling_convention():
    """Why the workaround exists; fails once xDSL lists `ptx_kernel` itself."""
    probe = "from xdsl.dialects import llvm; print('ptx_kernel' in llvm.LLVM_CALLING_CONVS)"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == "False"
