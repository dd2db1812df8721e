"""Compiling the generated kernels: a configuration to a CompiledProgram, many configurations
to PTX in the process pool of compile_cache.py, cached on disk.

    compile_kernel(cfg, target="sm_90", validate=False, keep_ir=False) -> CompiledProgram
    compile_ptx_many(configs, target="sm_90", processes=None, cache_dir=".tilesync-cache")
        -> [PTX text]
    kernel_module(cfg) -> builtin.module     (Gemm, Conv, Softmax, LayerNorm, RowDot or
                                              Attention config)

A kernel runs through the default pipeline (KERNEL_TO_LLVM). A configuration that needs a
target beyond the device's (wgmma: sm_90a) gets it where sm_90 is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

import tilesync
from tilesync.contract import CompiledProgram
from tilesync.harness.compile_cache import CACHE_DIR, CompileCache, compile_many
from tilesync.kernels.attention import attention_combine_module, attention_module
from tilesync.kernels.config import (
    AttentionConfig,
    CombineConfig,
    ConvConfig,
    GemmConfig,
    LayerNormConfig,
    RowDotConfig,
    SoftmaxConfig,
)
from tilesync.kernels.conv2d import conv2d_module
from tilesync.kernels.gemm import gemm_module
from tilesync.kernels.layer_norm import layer_norm_module
from tilesync.kernels.row_dot import row_dot_module
from tilesync.kernels.softmax import softmax_module
from tilesync.lowering.pipeline import KERNEL_TO_LLVM

KernelConfig = (GemmConfig | ConvConfig | SoftmaxConfig | LayerNormConfig | RowDotConfig
                | AttentionConfig | CombineConfig)


def kernel_module(cfg: KernelConfig) -> ModuleOp:
    """The generated module of a configuration."""
    if isinstance(cfg, GemmConfig):
        return gemm_module(0, 0, 0, config=cfg)
    if isinstance(cfg, ConvConfig):
        return conv2d_module(cfg)
    if isinstance(cfg, SoftmaxConfig):
        return softmax_module(cfg)
    if isinstance(cfg, LayerNormConfig):
        return layer_norm_module(cfg)
    if isinstance(cfg, RowDotConfig):
        return row_dot_module(cfg)
    if isinstance(cfg, AttentionConfig):
        return attention_module(cfg)
    if isinstance(cfg, CombineConfig):
        return attention_combine_module(cfg)
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
                     processes: int | None = None,
                     cache_dir: Path | str | None = CACHE_DIR) -> list[str]:
    """PTX of many configurations, in order: from the cache under `cache_dir`/ptx (None: no
    cache), the others compiled in a process pool."""
    cache = CompileCache(cache_dir, "ptx") if cache_dir is not None else None
    return compile_many(configs, target, processes, compile_one=_kernel_ptx, key=_kernel_key,
                        cache=cache)


def _kernel_ptx(cfg: KernelConfig, target: str) -> str:
    return compile_kernel(cfg, target).ptx


def _kernel_key(cfg: KernelConfig, target: str) -> str:
    return repr((cfg, kernel_target(cfg, target), KERNEL_TO_LLVM))


__all__ = ["KernelConfig", "compile_kernel", "compile_ptx_many", "kernel_module",
           "kernel_target"]
