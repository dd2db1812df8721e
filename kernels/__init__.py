"""Kernel generators written with the tile dialect (the integrator lists this package)."""

from tilesync.kernels.gemm import GemmConfig, gemm_config, gemm_kernel, gemm_module

__all__ = ["GemmConfig", "gemm_config", "gemm_kernel", "gemm_module"]
