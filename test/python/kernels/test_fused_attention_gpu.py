"""kernels/attention.py on the GPU: the fused kernel's O against an fp64 reference of
softmax(q · kᵀ · scale) · v per head (causal: keys up to each query), for one and several
heads, head widths 64 and 128, batches of sequences, f16 and bf16. O is poisoned with NaN
before every launch, so a tile never stored fails; every launch reads fresh random inputs."""

from __future__ import annotations

import math

import pytest

CASES = [
    dict(tokens=256, head_width=128),
    dict(tokens=512, head_width=64, heads=3, scale=0.125),
    dict(tokens=1024, head_width=128, heads=2, causal=True, scale=1 / math.sqrt(128)),
    dict(tokens=256, head_width=64, heads=2, sequences=3, causal=True, scale=0.125),
    dict(tokens=512, head_width=128, heads=2, sequences=2, scale=0.088, stages=3),
    dict(tokens=384, head_width=128, heads=1, causal=True, scale=0.088, dtype="bf16"),
    dict(tokens=512, head_width=128, heads=2, scale=0.088, mma="wgmma"),
    dict(tokens=512, head_width=128, heads=3, sequences=2, causal=True, scale=0.088,
         mma="wgmma", block_m=128),
    dict(tokens=1024, head_width=128, heads=2, causal=True, scale=0.088, mma="wgmma",
         block_n=128),
    dict(tokens=256, head_width=64, heads=2, sequences=2, causal=True, scale=0.125,
         mma="wgmma", block_m=128, block_n=128, dtype="bf16"),
    dict(tokens=512, head_width=64, heads=2, causal=True, scale=0.125, block_m=128),
]


def _loaded(case, seed: int):
    """(torch, the config, its kernel loaded, the torch dtype, the tolerance, a generator)."""
    from tilesync.harness.runner import AttentionRunner
    from tilesync.kernels.config import attention_config

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    cfg = attention_config(**case)
    dtype = torch.float16 if cfg.dtype == "f16" else torch.bfloat16
    tol = 2e-2 if cfg.dtype == "f16" else 4e-2
    return (torch, cfg, AttentionRunner(cfg), dtype, tol,
            torch.Generator(device="cuda").manual_seed(seed))


def reference(torch, qkv, cfg):
    """fp64 O, [B·T, C], the heads side by side."""
    t, d, h, b = cfg.tokens, cfg.head_width, cfg.heads, cfg.sequences
    x = qkv.double().view(b, t, 3, h, d)
    q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))  # b, h, t, d
    s = (q @ k.transpose(-1, -2)) * cfg.scale
    if cfg.causal:
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool, device=s.device).triu(1),
                          float("-inf"))
    return (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(b * t, h * d)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_fused_attention_matches_fp64(case, gpu_device):
    torch, cfg, runner, dtype, tol, gen = _loaded(case, seed=7)
    for run in range(3):
        qkv = (torch.randn(cfg.rows, 3 * cfg.width, device="cuda", generator=gen) * 2
               ).to(dtype)
        o = torch.full((cfg.rows, cfg.width), float("nan"), device="cuda", dtype=dtype)
        runner.launch(qkv, o)
        torch.cuda.synchronize()
        want = reference(torch, qkv, cfg)
        assert not o.isnan().any(), f"run {run}: tiles of O never stored"
        err = ((o.double() - want).abs().max() / want.abs().max()).item()
        assert err < tol, f"run {run}: max error {err:.3g} of the largest |O|"


CACHED_CASES = [
    dict(tokens=1, head_width=128, heads=3, sequences=4, cached=512, scale=0.088),
    dict(tokens=1, head_width=128, heads=2, sequences=2, cached=1024, scale=0.088,
         mma="wgmma", block_n=128),
    dict(tokens=5, head_width=64, heads=2, sequences=3, causal=True, cached=128, scale=0.125),
    dict(tokens=70, head_width=64, heads=2, sequences=2, causal=True, cached=256,
         scale=0.125, mma="wgmma", block_m=64, dtype="bf16"),
    dict(tokens=130, head_width=128, heads=1, sequences=2, cached=64, scale=0.088,
         block_m=128, stages=3),
    # the keys split over blocks (flash-decoding), merged by the combine kernel
    dict(tokens=1, head_width=128, heads=3, sequences=2, cached=2048, scale=0.088,
         mma="wgmma", block_n=128, splits=9),
    dict(tokens=3, head_width=64, heads=2, sequences=3, cached=512, scale=0.125, splits=5),
]


def cached_reference(torch, qkv, k_cache, v_cache, cfg):
    """fp64 O, B x T x C: the new tokens' queries over the cached keys and their own (causal:
    new token i sees the cache and new tokens 0 .. i)."""
    t, d, h, b, s = cfg.tokens, cfg.head_width, cfg.heads, cfg.sequences, cfg.cached
    x = qkv.double().view(b, t, 3, h, d)
    q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))  # b, h, t, d
    k = torch.cat([k_cache.double().view(b, h, s, d), k], dim=2)
    v = torch.cat([v_cache.double().view(b, h, s, d), v], dim=2)
    scores = (q @ k.transpose(-1, -2)) * cfg.scale  # b, h, t, s + t
    if cfg.causal:
        later = torch.ones(t, s + t, dtype=torch.bool, device=scores.device).triu(s + 1)
        scores = scores.masked_fill(later, float("-inf"))
    return (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, h * d)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CACHED_CASES,
                         ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_attention_after_a_kv_cache_matches_fp64(case, gpu_device):
    """Decoding: the new tokens' q, k and v in QKV, the earlier tokens' keys and values in the
    caches. O (B x T x C) poisoned before each launch; the buffer past O is poisoned too and
    must stay so (a padding row stored would land there)."""
    torch, cfg, runner, dtype, tol, gen = _loaded(case, seed=11)
    b, h, s, d, t = cfg.sequences, cfg.heads, cfg.cached, cfg.head_width, cfg.tokens

    def fresh(*shape):
        return (torch.randn(*shape, device="cuda", generator=gen) * 2).to(dtype)

    for run in range(3):
        qkv = fresh(cfg.rows, 3 * cfg.width)
        k_cache, v_cache = fresh(b, h, s, d), fresh(b, h, s, d)
        buffer = torch.full((b * t + 64, cfg.width), float("nan"), device="cuda",
                            dtype=dtype)
        o = buffer[:b * t].view(b, t, cfg.width)
        split = {}
        if cfg.splits > 1:  # the splits' partials, poisoned too
            split = {name: torch.full((cfg.parts_rows, cfg.width), float("nan"),
                                      device="cuda") for name in ("parts", "stats")}
        runner.launch(qkv, o, k_cache, v_cache, **split)
        torch.cuda.synchronize()
        want = cached_reference(torch, qkv, k_cache, v_cache, cfg)
        assert not o.isnan().any(), f"run {run}: rows of O never stored"
        assert buffer[b * t:].isnan().all(), f"run {run}: a padding row was stored"
        err = ((o.double() - want).abs().max() / want.abs().max()).item()
        assert err < tol, f"run {run}: max error {err:.3g} of the largest |O|"
