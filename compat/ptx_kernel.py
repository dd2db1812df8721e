"""xDSL 0.74's llvm dialect knows only CPU calling conventions; NVPTX kernels are
`llvm.func ptx_kernel @k`.

Importing this module registers the name (idempotently) with xDSL's list, so
`#llvm.cconv<ptx_kernel>` verifies and `llvm.func ptx_kernel` parses; the llvm dialect loader
(`tilesync.dialects`), convert-func-to-llvm and the llvmlite translation import it.
"""

from __future__ import annotations

from xdsl.dialects import llvm

PTX_KERNEL_CCONV = "ptx_kernel"
llvm.LLVM_CALLING_CONVS.add(PTX_KERNEL_CCONV)

__all__ = ["PTX_KERNEL_CCONV"]
