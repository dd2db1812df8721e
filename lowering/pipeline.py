"""The lowering pipeline from kernel-level IR to the llvm dialect, as a list of named passes.

Each step is a registered pass that runs alone with `tilesync-opt -p NAME`; this file only
orders them (in the spirit of Triton's compiler.py: the stages readable as a list).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

KERNEL_TO_LLVM: tuple[str, ...] = (
    "convert-sync-to-nvvm",      # sync.tile/wait/post → gpu ids, scf spin loops, nvvm atomics
    "convert-tile-to-nvvm",      # tensor-core tile ops → ldmatrix / mma.sync / cp.async
    "lower-affine",              # policy maps (affine.apply) → arith
    "convert-gpu-to-nvvm",       # thread/block ids, barriers → nvvm
    "lower-scf-to-cf",           # structured control flow (incl. spin loops) → cf
    "convert-nvvm-to-llvm",      # nvvm → intrinsics and inline PTX
    "convert-memref-to-llvm",    # bare pointers, GEP + load/store, shared-memory globals
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",      # gpu.func → llvm.func (ptx_kernel, launch bounds)
    "reconcile-unrealized-casts",
)


def build_pipeline(names: tuple[str, ...] | list[str] | str = KERNEL_TO_LLVM,
                   callback=None) -> PassPipeline:
    """A PassPipeline from pass names or a `-p` style spec string (options allowed).

    xDSL's `lower-affine` and `reconcile-unrealized-casts` run as their faster equivalents
    (`compat.fast_passes`: the same rewrites)."""
    from tilesync.compat.fast_passes import FAST_PASSES
    from tilesync.tools.universe import all_passes_with_xdsl

    spec = names if isinstance(names, str) else ",".join(names)
    passes = all_passes_with_xdsl()
    for name, fast in FAST_PASSES.items():
        passes[name] = lambda fast=fast: fast
    return PassPipeline.parse_spec(passes, spec, callback)


@dataclass(frozen=True)
class LowerToLLVMPass(ModulePass):
    """`tilesync-lower-to-llvm`: the whole KERNEL_TO_LLVM list as one pass."""

    name = "tilesync-lower-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        build_pipeline(KERNEL_TO_LLVM).apply(ctx, op)
