"""What the NVVM instruction tests share: a kernel of nvvm ops lowered to PTX by LLVM's NVPTX
backend, and its instructions found in program order."""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.context import Context
from xdsl.parser import Parser

from tilesync.dialects import all_dialects_with_xdsl
from tilesync.lowering.pipeline import build_pipeline
from tilesync.lowering.ptx import module_to_ptx

PIPELINE = ["convert-gpu-to-nvvm", "convert-nvvm-to-llvm", "convert-func-to-llvm",
            "reconcile-unrealized-casts"]


def lowered_ptx(kernel: str, arch: str = "sm_90a") -> str:
    """The PTX of `kernel` (MLIR text), with every nvvm op lowered."""
    ctx = Context()
    for name, factory in all_dialects_with_xdsl().items():
        ctx.register_dialect(name, factory)
    module = Parser(ctx, kernel).parse_module()
    module.verify()
    build_pipeline(PIPELINE).apply(ctx, module)
    assert not [op.name for op in module.walk() if op.name.startswith("nvvm.")]
    return module_to_ptx(module, arch)


def assert_in_program_order(ptx: str, patterns: Sequence[str]) -> None:
    """Each regular expression matches, each after the previous one, and no LLVM op is left."""
    position = 0
    for pattern in patterns:
        found = re.compile(pattern).search(ptx, position)
        assert found, f"{pattern!r} missing or out of order in:\n{ptx}"
        position = found.end()
    assert "llvm." not in ptx
