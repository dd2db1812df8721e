"""The generated kernels on the current GPU: runners that load the PTX (compiling it when none
is given), own what a launch needs beyond the caller's buffers, launch, and time.

    GemmRunner(cfg, ptx=None).launch(a, b, c, bias=None, stream=None, seed=None)
    Conv2dRunner(cfg, ptx=None).launch(x, w, y, bias=None, stream=None)
    SoftmaxRunner(cfg, ptx=None).launch(x, y, seed=None, stream=None)
    time_gemm(cfg, warmup=10, reps=50) -> {"median_ms", "tflops", "registers", ...}
"""

from __future__ import annotations

import math

import numpy as np

from tilesync.contract import IM2COL_CORNERS
from tilesync.harness.compile import compile_kernel
from tilesync.kernels.config import (
    AttentionConfig,
    CombineConfig,
    ConvConfig,
    GemmConfig,
    LayerNormConfig,
    RowDotConfig,
    SoftmaxConfig,
    tensor_map_swizzle,
)
from tilesync.kernels.reference import host_array
from tilesync.runtime.buffers import DeviceBuffer, device_pointer_and_size
from tilesync.runtime.device import get_device, max_active_clusters
from tilesync.runtime.launch import launch
from tilesync.runtime.module import load_ptx
from tilesync.runtime.tensor_map import DTYPE_BYTES, TensorMapCache
from tilesync.runtime.timing import time_region


class GemmRunner:
    """The compiled kernel loaded on the current GPU, launched on device buffers.

    `ptx` skips the compile (e.g. PTX compiled in a process pool). Split-K configs (but those
    reducing in a cluster) and stream-K ones own their fp32 workspace and counters, zeroed
    once here: every launch leaves them zero again. A
    warp-specialized (tma_ws) config takes A and B (and C) as buffers like the others; the runner
    encodes their tensor maps (once per buffer) and launches the persistent grid, at most one
    block per SM of this GPU (clusters: as many as can run at once)."""

    def __init__(self, cfg: GemmConfig, ptx: str | None = None):
        self.cfg = cfg
        self.program = None
        if ptx is None:
            self.program = compile_kernel(cfg, get_device().arch)
            ptx = self.program.ptx
        self.ptx = ptx
        self.module = load_ptx(ptx, cfg.name)
        self.kernel = self.module.function(cfg.kernel_name, cfg.signature)
        self.tensor_maps = TensorMapCache()
        self.grid = cfg.grid  # stream-K: the blocks its shares were cut for, cfg.sms
        if cfg.warp_specialized and cfg.persistent and not cfg.stream_k_tiles:
            cluster = cfg.cluster_m
            slots = get_device().sm_count // cluster
            if cluster > 1:
                self.kernel.ensure_dynamic_shared_memory(cfg.dynamic_shared_bytes)
                slots = min(slots, max_active_clusters(self.kernel, cluster, cfg.threads,
                                                       cfg.dynamic_shared_bytes))
            self.grid = (cluster * min(cfg.cluster_tiles, slots), 1, 1)
        self.workspace = self.counters = None
        if cfg.split_workspace:
            self.workspace = DeviceBuffer.zeros(cfg.workspace_shape, np.float32)
            self.counters = DeviceBuffer.zeros(cfg.counters_shape, np.int32)

    def launch(self, a, b, c, bias=None, stream=None, seed: int | None = None,
               a_head=None) -> None:
        """`a_head`: A's first columns when A is a concatenation (cfg.a_head)."""
        args = tensor_map_args(self.cfg, [a, b, c], self.tensor_maps)
        if self.cfg.a_head:
            if a_head is None:
                raise ValueError("a GEMM whose A is a concatenation needs a_head=")
            args.append(a_head)
        if self.cfg.has_bias:
            args.append(bias)
        if self.cfg.dropout is not None:
            if seed is None:
                raise ValueError("a dropout GEMM needs seed=")
            args.append(int(seed))
        if self.cfg.split_workspace:
            args += [self.workspace, self.counters]
        launch(self.kernel, self.grid, self.cfg.block, args, stream=stream,
               shared_mem=self.cfg.dynamic_shared_bytes)


class Conv2dRunner:
    """The conv kernel loaded on the current GPU (y = conv(x, w) [+ bias])."""

    def __init__(self, cfg: ConvConfig, ptx: str | None = None):
        self.cfg = cfg
        if ptx is None:
            ptx = compile_kernel(cfg, get_device().arch).ptx
        self.gemm = GemmRunner(cfg.gemm, ptx=ptx)
        self.kernel = self.gemm.kernel

    def launch(self, x, w, y, bias=None, stream=None) -> None:
        self.gemm.launch(x, w, y, bias, stream=stream)


class _LoadedKernel:
    """A generated kernel with its own launch (softmax, layer norm, row dot, attention)
    loaded on the current GPU."""

    def __init__(self, cfg: SoftmaxConfig | LayerNormConfig | RowDotConfig | AttentionConfig
                 | CombineConfig, ptx: str | None = None):
        self.cfg = cfg
        if ptx is None:
            ptx = compile_kernel(cfg, get_device().arch).ptx
        self.module = load_ptx(ptx, cfg.name)
        self.kernel = self.module.function(cfg.name, cfg.signature)


class AttentionRunner(_LoadedKernel):
    """The fused attention kernel loaded on the current GPU (O = softmax(q · kᵀ · scale) · v
    per head, q, k, v read from QKV; after a KV cache (`cfg.cached`) the keys and values of
    the earlier tokens read from k_cache and v_cache, B x H x S' x D)."""

    cfg: AttentionConfig

    def __init__(self, cfg: AttentionConfig, ptx: str | None = None):
        super().__init__(cfg, ptx)
        # the merge of the splits (kernels/attention.py)
        self.combine = _LoadedKernel(cfg.combine) if cfg.splits > 1 else None

    def launch(self, qkv, o, k_cache=None, v_cache=None, parts=None, stats=None,
               stream=None) -> None:
        """O from QKV (and the caches); split (`cfg.splits` > 1), the splits' partial O and
        Stats go to `parts` and `stats` (fp32, each `cfg.parts_rows` x C), then the merge
        writes O."""
        caches = [k_cache, v_cache]
        if bool(self.cfg.cached) != all(c is not None for c in caches) or \
                (not self.cfg.cached and any(c is not None for c in caches)):
            raise ValueError(f"{self.cfg.name} takes k_cache and v_cache "
                             f"{'' if self.cfg.cached else 'not '}(cached = {self.cfg.cached})")
        if (self.combine is not None) != (parts is not None and stats is not None):
            raise ValueError(f"{self.cfg.name} takes parts and stats exactly where its keys "
                             f"are split (splits = {self.cfg.splits})")
        out = [parts, *caches, stats] if self.combine is not None else \
            [o] + (caches if self.cfg.cached else [])
        launch(self.kernel, self.cfg.grid, self.cfg.block, [qkv, qkv, qkv, *out],
               stream=stream, shared_mem=self.cfg.dynamic_shared_bytes)
        if self.combine is not None:
            merge = self.combine.cfg
            launch(self.combine.kernel, merge.grid, merge.block, [parts, stats, o],
                   stream=stream)


class SoftmaxRunner(_LoadedKernel):
    """The softmax kernel (y = dropout(softmax(x)) over rows)."""

    cfg: SoftmaxConfig

    def launch(self, x, y, seed: int | None = None, stream=None) -> None:
        args = [x, y] + ([int(seed if seed is not None else 0)] if self.cfg.dropout else [])
        launch(self.kernel, self.cfg.grid, self.cfg.block, args, stream=stream)


class LayerNormRunner(_LoadedKernel):
    """The layer-norm kernel (y = layer_norm(x) · gamma + beta over rows)."""

    cfg: LayerNormConfig

    def launch(self, x, gamma, beta, y, stream=None) -> None:
        launch(self.kernel, self.cfg.grid, self.cfg.block, [x, gamma, beta, y], stream=stream)


class RowDotRunner(_LoadedKernel):
    """The row-dot kernel (y[r] = x[r, :] · w + bias)."""

    cfg: RowDotConfig

    def launch(self, x, w, bias, y, stream=None) -> None:
        launch(self.kernel, self.cfg.grid, self.cfg.block, [x, w, bias, y], stream=stream)


def gemm_tensor_maps(cfg: GemmConfig, operands, cache: TensorMapCache | None = None
                     ) -> list:
    """The tensor maps of a warp-specialized GEMM's operands (device arrays of A, B and, with
    the TMA-store epilogue, C), in the order and with the boxes and swizzles of
    `cfg.tensor_map_boxes` (operands beyond them are not maps; A's an im2col map of the input
    with `cfg.im2col`); encoded once per buffer with `cache`."""
    cache = cache or TensorMapCache()
    boxes = cfg.tensor_map_boxes
    corners = {"A": IM2COL_CORNERS} if cfg.im2col else {}
    maps = []
    for array, (name, box), shape in zip(operands[:len(boxes)], boxes.items(),
                                         cfg.tensor_map_shapes.values(), strict=True):
        address, size = device_pointer_and_size(array)
        expected = math.prod(shape) * DTYPE_BYTES[cfg.dtype]
        if size is not None and size < expected:  # the copies would leave the array
            raise ValueError(f"{name} of {cfg.kernel_name} is a {'x'.join(map(str, shape))} "
                             f"{cfg.dtype} tensor ({expected} bytes), got an array of {size} "
                             f"bytes")
        maps.append(cache.get(address, cfg.dtype, shape, box, tensor_map_swizzle(box),
                              corners.get(name)))
    return maps


def tensor_map_args(cfg: GemmConfig, operands, cache: TensorMapCache | None = None) -> list:
    """A, B, C as the kernel takes them: a warp-specialized kernel's A and B (and C) as their
    tensor maps (`gemm_tensor_maps`), the others as they are."""
    if not cfg.warp_specialized:
        return list(operands)
    maps = gemm_tensor_maps(cfg, operands, cache)
    return [*maps, *operands[len(maps):]]


def time_gemm(cfg: GemmConfig, warmup: int = 10, reps: int = 50, seed: int = 0) -> dict:
    """Time the kernel on random data: median ms and TFLOP/s (2 M N K flops per launch)."""
    runner = GemmRunner(cfg)
    rng = np.random.default_rng(seed)
    b_shape = (cfg.K, cfg.N) if cfg.b_layout == "row" else (cfg.N, cfg.K)

    def random(shape):
        return DeviceBuffer.from_numpy(host_array(rng.standard_normal(shape), cfg.dtype))

    a, b = random((cfg.M, cfg.K)), random(b_shape)
    c = DeviceBuffer.empty((cfg.M, cfg.N), np.float16 if cfg.dtype == "f16" else np.uint16)
    bias = random(cfg.N) if cfg.has_bias else None
    timing = time_region(lambda: runner.launch(a, b, c, bias), warmup=warmup, reps=reps)
    median_s = timing.median_ms * 1e-3
    return {"config": cfg, "median_ms": timing.median_ms, "tflops": cfg.flops / median_s / 1e12,
            "registers": runner.kernel.num_regs, "timing": timing}


__all__ = ["AttentionRunner", "Conv2dRunner", "GemmRunner", "LayerNormRunner", "RowDotRunner",
           "SoftmaxRunner",
           "gemm_tensor_maps", "tensor_map_args", "time_gemm"]
