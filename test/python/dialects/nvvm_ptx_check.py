"""What the NVVM instruction tests share: a kernel of nvvm ops lowered to PTX by LLVM's NVPTX
backend, its instructions found in program order, and the checks each such kernel gets
(`LoweredKernelChecks`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence

import pytest
from xdsl.context import Context
from xdsl.parser import Parser

from tilesync.dialects import all_dialects_with_xdsl
from tilesync.lowering.pipeline import build_pipeline
from tilesync.lowering.ptx import module_to_ptx, validate_ptx

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


class LoweredKernelChecks:
    """The checks of one kernel of nvvm ops: a test class derives from it with `KERNEL` (MLIR
    text) and `EXPECTED` (the instructions' regular expressions, in program order)."""

    KERNEL: str
    EXPECTED: Sequence[str]
    ARCH = "sm_90a"

    @pytest.fixture(scope="class")
    @classmethod
    def ptx(cls) -> str:
        return lowered_ptx(cls.KERNEL, cls.ARCH)

    def test_each_op_is_its_instruction_in_program_order(self, ptx: str):
        assert_in_program_order(ptx, self.EXPECTED)

    def test_nvjitlink_accepts_the_ptx(self, ptx: str):
        assert validate_ptx(ptx, self.ARCH).arch == self.ARCH

    @pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
    def test_ptxas_assembles_the_ptx(self, ptx: str, tmp_path):
        source = tmp_path / "kernel.ptx"
        source.write_text(ptx)
        subprocess.run(["ptxas", f"-arch={self.ARCH}", str(source), "-o",
                        str(tmp_path / "kernel.cubin")], check=True, capture_output=True)
