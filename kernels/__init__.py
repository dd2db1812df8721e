"""Kernel generators written with the tile dialect.

config.py (what a kernel computes, its sizes), gemm.py / conv2d.py / softmax.py / mlp.py (the
IR generators, on builder.py's BlockBuilder), compile.py and compile_cache.py (to PTX, many at
once, cached), reference.py (the host's float64 results), runner.py (launch and time on a GPU).
"""

from tilesync.kernels.config import GemmConfig, gemm_config
from tilesync.kernels.gemm import gemm_kernel, gemm_module

__all__ = ["GemmConfig", "gemm_config", "gemm_kernel", "gemm_module"]
