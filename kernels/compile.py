"""Compiling the generated kernels: a configuration to a CompiledProgram, many configurations
to PTX in a process pool.

    compile_kernel(cfg, target="sm_90", validate=False, keep_ir=False) -> CompiledProgram
    compile_ptx_many(configs, target="sm_90", processes=None) -> [PTX text]
    kernel_module(cfg) -> builtin.module     (GemmConfig, ConvConfig or SoftmaxConfig)

A kernel runs through the default pipeline (KERNEL_TO_LLVM). A configuration that needs a
target beyond the device's (wgmma: sm_90a) gets it where sm_90 is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import ModuleOp

import tilesync
from tilesync.contract import CompiledProgram
from tilesync.kernels.config import ConvConfig, GemmConfig, SoftmaxConfig
from tilesync.kernels.conv2d import conv2d_module
from tilesync.kernels.gemm import gemm_module
from tilesync.kernels.softmax import softmax_module

KernelConfig = GemmConfig | ConvConfig | SoftmaxConfig


def kernel_module(cfg: KernelConfig) -> ModuleOp:
    """The generated module of a configuration."""
    if isinstance(cfg, GemmConfig):
        return gemm_module(0, 0, 0, config=cfg)
    if isinstance(cfg, ConvConfig):
        return conv2d_module(cfg)
    if isinstance(cfg, SoftmaxConfig):
        return softmax_module(cfg)
    raise TypeError(f"no generator for {type(cfg).__name__}")


def kernel_target(cfg: KernelConfig, target: str = "sm_90") -> str:
    """`target`, or the one the kernel needs where sm_90 is asked for (wgmma: sm_90a)."""
    return cfg.target if cfg.target is not None and target == "sm_90" else target


def compile_kernel(cfg: KernelConfig, target: str = "sm_90", validate: bool = False,
                   keep_ir: bool = False) -> CompiledProgram:
    """tilesync.compile of the generated module (PTX in `.ptx`)."""
    return tilesync.compile(kernel_module(cfg), target=kernel_target(cfg, target),
                            validate=validate, keep_ir=keep_ir)


def compile_ptx_many(configs: Iterable[KernelConfig], target: str = "sm_90",
                     processes: int | None = None) -> list[str]:
    """PTX of many configs, compiled in a process pool (generation and lowering are pure
    Python, one core each); falls back to one process where a pool cannot start."""
    configs = list(configs)
    if len(configs) <= 1 or processes == 1:
        return [_kernel_ptx(c, target) for c in configs]
    import concurrent.futures
    import multiprocessing
    import os

    workers = processes or min(len(configs), max(1, (os.cpu_count() or 2) - 1), 16)
    try:
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            return list(pool.map(_kernel_ptx, configs, [target] * len(configs)))
    except (OSError, RuntimeError, concurrent.futures.process.BrokenProcessPool):
        return [_kernel_ptx(c, target) for c in configs]


def _kernel_ptx(cfg: KernelConfig, target: str) -> str:
    return compile_kernel(cfg, target).ptx


__all__ = ["KernelConfig", "compile_kernel", "compile_ptx_many", "kernel_module",
           "kernel_target"]
