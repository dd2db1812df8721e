"""`tilesync bench attention`: self-attention over one sequence as cuSync's chain of kernels,
synchronized tile by tile, against stream sync of the same kernels and against torch.

    attention_benchmarks(shapes=SHAPES, warmup=5, reps=30) -> dict   (the CLI adds "device")
    attention_table(result) -> str;  attention_plot(result, out_dir) -> PNG path or None

Per shape (tokens T, width C; with heads also H and the model width E) the program is the one
graph-to-stages builds for the torch front end from `y = linear(softmax(q · kᵀ · D^-1/2) · v,
w_out)` with `q, k, v = split(linear(x, w_qkv))` (transforms/graph/graph_to_stages.py:
match_attention, attention_configs, attention_stage_module): five kernels, QKV = x · w_qkvᵀ
(wgmma), S = q · kᵀ (wgmma, q and k read in place from QKV), P = softmax(S · scale) (a row per
block), O = P · v (mma.sync, v in place) and y = O · w_outᵀ, with a dependency per operand a
kernel reads from another. ONE_HEAD_SHAPES are one head as wide as x: C = 128 is one head of
GPT-3 or LLaMA, T = 512-4096 a prefill. HEAD_SHAPES are the paper's: the heads one GPU holds
of GPT-3 175B (12 of 128 over x of 12288) and LLaMA-65B (8 of 128 over 8192) under 8-way
tensor parallelism, T = 512-2048, with q, k and v viewed as heads and merged back (S, P: H x
T x T; each tile of q · kᵀ and P · v one head's). CAUSAL_SHAPES (`--causal`) are a decoder's
prefill: a batch of B sequences (x B x T x E) with the causal mask (torch's is_causal; its
reference and torch's paths masked alike, the floor counting half of the products). The modes
are bench/mlp.py's, with the same passes:

* stream_sync     the five kernels on one stream, no PDL: the same kernels, bulk-synchronous;
* row+pdl         the generated policies and programmatic dependent launch;
* tile+pdl        TileSync (one semaphore per producer tile), PDL;
* row+wait_kernel cuSync's wait-kernels instead of PDL (each kernel on its stream);
* fused:stream_sync, fused:row+pdl, fused:tile+pdl  the same on graph-to-stages' fused
                  program (`attention=fused`: the QKV GEMM, one attention kernel that keeps S
                  and P in registers, the output GEMM; its speedup against fused:stream_sync);

and torch: the chain as written (linear, split, matmul, softmax, matmul, linear) eager and
replayed from a CUDA graph (torch_eager, torch_graph: the library the front end's pattern
replaces), and with torch's fused attention (scaled_dot_product_attention: flash attention on
Hopper) between the two linears, eager and in a graph (torch_sdpa_eager, torch_sdpa_graph).
sync-verify{sms=132} proves every program (its default limit, 2^20 tiles a stage, is far above
the largest grid here).

Every mode's y is checked against an fp32 reference computed by torch (‖y − ref‖ / ‖ref‖ <
TOL, every element finite); the temporaries (QKV, S, P, O) and y are poisoned with NaN before
the first run, and again in every turn after its untimed runs (the hold's calibration, the
warm-up), and y is checked after the turn's timed runs, which run back to back without a
memset (each run a new epoch). The floor is the longer of the operation's flops (what the math
needs) and its bytes (floor_bytes: x and the weights read, Q, K, V written by the projection
and read by the attention, the KV caches read, O written and read by the output projection, y
written; not S and P, which the fused forms and SDPA never write: the unfused chain's extra,
unfused_extra_bytes, is recorded beside it) at the run's measured peak rate and copy bandwidth,
the highest measured in the run (report.settle_floors). The library baseline ("vs lib", the
plot) is the fastest of torch's four forms at the shape, named on its line.

The mode cost model (analysis/mode_cost.py, bench/mode_choice.py) chooses a mode per row, or
torch's chain in a graph (the library) where none of ours is predicted faster; a tile's work,
which shares the measured stream-sync time among the stages, is its floor at the run's rates
(the softmax has no flops to share it by).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from tilesync.bench import mlp, mode_choice, stage_bench
from tilesync.bench.report import check_floors, floor_rates_text, settle_floors
from tilesync.bench.report import floor_ms as roofline_ms
from tilesync.contract import target_for_device
from tilesync.harness.compile_cache import CACHE_DIR, CompileCache, source_digest
from tilesync.transforms.graph.graph_to_stages import (
    ATTENTION,
    COMBINE,
    CONTEXT,
    OUT,
    QKV,
    SCORES,
    SOFTMAX,
)

WIDTH = 128  # one head of GPT-3 or LLaMA
ONE_HEAD_SHAPES = tuple((tokens, WIDTH) for tokens in (512, 1024, 2048, 4096))
MODEL_HEADS = {"gpt3": (12, 12288), "llama": (8, 8192)}
"""(heads, model width) a GPU holds of GPT-3 175B (96 heads of 128 over 12288) and LLaMA-65B
(64 of 128 over 8192) under 8-way tensor parallelism, the paper's attention."""
HEAD_SHAPES = tuple((tokens, heads * WIDTH, heads, model)
                    for heads, model in MODEL_HEADS.values() for tokens in (512, 1024, 2048))
SHAPES = ONE_HEAD_SHAPES + HEAD_SHAPES
"""(T, C) for one head as wide as x; (T, C, H, E) for H heads of C / H columns over x of E:
QKV = x · w_qkvᵀ is T x 3C, y T x E; (T, C, H, E, B, causal) for a batch of B sequences
(x B x T x E), causal or not."""
GPT2_HEADS = (12, 768)  # GPT-2 small: 12 heads of 64 over 768, the whole model on one GPU
CAUSAL_SHAPES = ((1024, 768, *GPT2_HEADS, 1, True), (256, 768, *GPT2_HEADS, 8, True),
                 (1024, 12 * WIDTH, *MODEL_HEADS["gpt3"], 1, True),
                 (2048, 12 * WIDTH, *MODEL_HEADS["gpt3"], 1, True),
                 (2048, 8 * WIDTH, *MODEL_HEADS["llama"], 1, True))
"""`tilesync bench attention --causal`: a decoder's prefill, causal (T, C, H, E, B, causal):
GPT-2 small over one sequence of 1024 tokens and a batch of 8 of 256; the paper's GPT-3 and
LLaMA heads under 8-way tensor parallelism at T = 1024 and 2048."""
DECODE_SHAPES = tuple((1, heads * WIDTH, heads, model, b, False, cache)
                      for heads, model in MODEL_HEADS.values() for b in (1, 4)
                      for cache in (512, 2048, 4096))
"""`tilesync bench attention --decode`: the paper's token generation, one new token for each of
B = 1 or 4 sequences with S' = 512-4096 tokens in their KV caches (T, C, H, E, B, causal,
S'): GPT-3's and LLaMA's heads under 8-way tensor parallelism; the fused program only (the
chain reads k from QKV alone)."""
GPU_TEST_SHAPES = ((256, 64), (256, 128, 2, 512), (256, 128, 2, 512, 2, True),
                   (128, 64, 1, 64, 3, True), (512, 1536, 12, 512),
                   (1, 256, 2, 512, 3, False, 512))
"""test_attention_gpu.py's shapes: small, so that CI compiles and proves their programs fast;
one head, two heads of 64 over a wider x (K = 512: the QKV GEMM the TMA kernel), the same over
a batch of two sequences with the causal mask, one causal head over three sequences, and
twelve heads of 128 whose QKV GEMM takes 192-wide tiles (projection_width: one wave of 96
where 128 wide would take two), so a tile holds one and a half heads; one new token of three
sequences after KV caches of 512 (the fused modes only)."""


def dims(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(T, C, H, E) of a bench shape: (T, C) is one head as wide as x."""
    if len(shape) == 2:
        tokens, width = shape
        return tokens, width, 1, width
    tokens, width, heads, model = shape[:4]
    return tokens, width, heads, model


def batch(shape: tuple[int, ...]) -> tuple[int, bool]:
    """(B, causal) of a bench shape: one sequence, not causal, unless it names them."""
    return (shape[4], shape[5]) if len(shape) >= 6 else (1, False)


def cached(shape: tuple[int, ...]) -> int:
    """S' of a bench shape: the tokens a sequence has in a KV cache (decoding), else 0."""
    return shape[6] if len(shape) == 7 else 0
VERIFY_SMS = 132
VERIFY_STEPS = 1_000_000
"""sync-verify's step budget for the fused programs: a causal block of 128 queries over 2048
tokens walks up to 16 key blocks of masked scores (12 heads: 1.0-3.0 s on a 2-core host; the
default budget refuses them)."""
FUSED = "fused:"
"""Prefix of the modes that run the fused attention program (graph-to-stages'
fused_attention_stage_module: QKV GEMM, one attention kernel, output GEMM); their speedup is
against fused:stream_sync."""
CHAIN_MODES = ("stream_sync", "row+pdl", "tile+pdl", "row+wait_kernel")
FUSED_MODES = tuple(f"{FUSED}{mode}" for mode in ("stream_sync", "row+pdl", "tile+pdl"))
"""Not one launch: the fused program's kernels have blocks of 128 to 384 threads, and one kernel
of all of them (sync-one-launch{mixed_blocks=true}) ran decoding at 0.72-0.98 of stream sync
on an H200 (bench/results/attention-decode-nvidia-h200.json, at b64eb07), where PDL gave
1.08-1.16."""
MODES = CHAIN_MODES + FUSED_MODES
"""Names and passes are bench/mlp.py's (mlp.MODES), so the benches compare alike."""
LIBRARY_FORMS = ("torch_eager", "torch_graph", "torch_sdpa_eager", "torch_sdpa_graph")
"""torch's forms the bench times: the chain as written and with scaled_dot_product_attention,
each eager and replayed from a CUDA graph."""
STAGES = (QKV, SCORES, SOFTMAX, CONTEXT, OUT)
FUSED_STAGES = (QKV, ATTENTION, OUT)


def modes_for(shape: tuple[int, ...], modes=MODES) -> tuple[str, ...]:
    """Those of `modes` that run the shape: after a KV cache the fused program's only (the
    chain reads k from QKV alone)."""
    return tuple(m for m in modes if m.startswith(FUSED)) if cached(shape) else tuple(modes)


def fused_stages(shape: tuple[int, ...]) -> tuple[str, ...]:
    """The fused program's stages: after a KV cache with the keys split, the merge too."""
    return (QKV, ATTENTION, COMBINE, OUT) if cached(shape) and \
        fused_spec(shape).attention.splits > 1 else FUSED_STAGES


def shape_label(shape: tuple[int, ...]) -> str:
    t, c, h, e = dims(shape)
    b, causal = batch(shape)
    label = f"T={t} C={c}" if h == 1 and e == c else f"T={t} H={h}x{c // h} E={e}"
    return label + (f" B={b}" if b > 1 else "") + (" causal" if causal else "") + \
        (f" S'={cached(shape)}" if cached(shape) else "")


def graph_text(shape: tuple[int, ...]) -> str:
    """The attention block as a graph-level function (what the torch front end emits); with
    heads, q, k and v viewed as heads (view, transpose) and the heads merged back; with a
    batch, every tensor but the weights B x ... (the views' perm [0, 2, 1, 3])."""
    t, c, h, e = dims(shape)
    b, causal = batch(shape)
    d = c // h
    scale = d ** -0.5
    lead = f"{b}x" if b > 1 else ""  # the batch dimension

    def ty(*sizes: int) -> str:
        return f"tensor<{lead}{'x'.join(map(str, sizes))}xf16>"

    x, w3, w, y = ty(t, e), f"tensor<{3 * c}x{e}xf16>", f"tensor<{e}x{c}xf16>", ty(t, e)
    qt = ht = ty(t, c)  # q, k, v; as heads where there are several
    s_ = cached(shape)
    keys = s_ + t  # the cached tokens' keys, then the new ones'
    st = ty(t, keys)
    kt = ty(h, s_, d) if h > 1 else ty(s_, c)  # a cache: the new k's (or v's) with S' tokens
    caches = f", %kc: {kt}, %vc: {kt}" if s_ else ""
    lines = [
        f"func.func @attention(%x: {x}, %wqkv: {w3}, %wo: {w}{caches}) -> {y} {{",
        f"  %qkv = graph.linear %x, %wqkv : ({x}, {w3}) -> {ty(t, 3 * c)}",
        f"  %q, %k, %v = graph.split %qkv dim -1 : ({ty(t, 3 * c)}) -> ({qt}, {qt}, {qt})",
    ]
    q, k, v = "%q", "%k", "%v"
    perm = "[0, 2, 1, 3]" if b > 1 else "[1, 0, 2]"
    if h > 1:
        viewed, ht, st = ty(t, h, d), ty(h, t, d), ty(h, t, keys)
        for name in "qkv":
            lines += [f"  %{name}4 = graph.reshape %{name} : ({qt}) -> {viewed}",
                      f"  %{name}h = graph.transpose %{name}4 perm {perm} : ({viewed}) -> "
                      f"{ht}"]
        q, k, v = "%qh", "%kh", "%vh"
    kvt = ht
    if s_:  # k and v after the cache: cat([cache, new], dim=-2)
        kvt = ty(h, keys, d) if h > 1 else ty(keys, c)
        lines += [f"  %ka = graph.concat %kc, {k} dim -2 : ({kt}, {ht}) -> {kvt}",
                  f"  %va = graph.concat %vc, {v} dim -2 : ({kt}, {ht}) -> {kvt}"]
        k, v = "%ka", "%va"
    lines += [
        f"  %s = graph.linear {q}, {k} : ({ht}, {kvt}) -> {st}",
        f"  %p = graph.softmax %s dim -1 scale {scale!r}{' causal' if causal else ''} : {st}",
        f"  %o = graph.matmul %p, {v} : ({st}, {kvt}) -> {ht}",
    ]
    o = "%o"
    if h > 1:
        viewed = ty(t, h, d)
        lines += [f"  %ot = graph.transpose %o perm {perm} : ({ht}) -> {viewed}",
                  f"  %om = graph.reshape %ot : ({viewed}) -> {qt}"]
        o = "%om"
    lines += [f"  %y = graph.linear {o}, %wo : ({qt}, {w}) -> {y}",
              f"  func.return %y : {y}", "}"]
    return "\n".join(lines)


def attention_match(shape: tuple[int, ...]):
    """graph-to-stages' match of the shape's graph function (AttentionMatch)."""
    from xdsl.dialects import func

    from tilesync.api import parse
    from tilesync.transforms.graph.graph_to_stages import match_attention

    module = parse(graph_text(shape))
    return match_attention(next(op for op in module.ops if isinstance(op, func.FuncOp)))


def attention_spec(shape: tuple[int, ...]):
    """graph-to-stages' configs of the shape (AttentionSpec), or its diagnostic."""
    from tilesync.transforms.graph.graph_to_stages import attention_configs

    return attention_configs(attention_match(shape))


def fused_spec(shape: tuple[int, ...]):
    """graph-to-stages' fused program's configs of the shape (FusedAttentionSpec)."""
    from tilesync.transforms.graph.graph_to_stages import fused_attention_configs

    return fused_attention_configs(attention_match(shape))


def mode_spec(shape: tuple[int, ...], mode: str):
    """The configs `mode` runs: the fused program's for the fused: modes, else the chain's."""
    return fused_spec(shape) if mode.startswith(FUSED) else attention_spec(shape)


def stage_module(shape: tuple[int, ...], mode: str):
    """The stage program of `mode` before its passes (stream_sync: one stream)."""
    from tilesync.transforms.graph.graph_to_stages import (
        attention_stage_module,
        fused_attention_stage_module,
    )

    build = fused_attention_stage_module if mode.startswith(FUSED) else attention_stage_module
    return stage_bench.for_mode(build(mode_spec(shape, mode)), mode)


def mode_passes(mode: str) -> list[str]:
    return mlp.mode_passes(mode.removeprefix(FUSED), VERIFY_SMS,
                           VERIFY_STEPS if mode.startswith(FUSED) else None)


def _job_key(job: tuple, target: str) -> str:
    shape, mode, debug = job
    return repr((mode_spec(shape, mode), mode_passes(mode), target, debug, mlp.TIMEOUT_NS))


def compile_job(job: tuple, target: str = "sm_90") -> dict[str, Any]:
    """Compile one (shape, mode, debug) program (wgmma: sm_90a where the device is sm_90)."""
    shape, mode, _ = job
    return stage_bench.compile_mode(job, target, stage_module(shape, mode), mode_passes(mode),
                                    mode_spec(shape, mode).target)


def attention_cache(directory: str | Path = CACHE_DIR) -> CompileCache:
    """The compile cache of the attention programs; its key covers this file."""
    return CompileCache(directory, "attention",
                        sources=source_digest(extra=[__file__, mlp.__file__]))


def compile_jobs(jobs, target: str = "sm_90", processes: int | None = None,
                 cache: CompileCache | None = None) -> dict[tuple, dict[str, Any]]:
    """compile_job results per job ({"job", "error"} for one that fails), from `cache` where
    it holds them, the others in a process pool (bench.mlp.compile_jobs)."""
    return mlp.compile_jobs(jobs, target, processes, cache, compile_one=compile_job,
                            key=_job_key)


def flops(shape: tuple[int, ...]) -> int:
    """Multiply-adds x 2 of the two linears and the two products with the keys and values (a
    causal mask needs half of those: the floor counts what the math needs, not what our
    kernels compute)."""
    t, c, _, e = dims(shape)
    b, causal = batch(shape)
    products = 2 * t * t * c * 2 // (2 if causal else 1) + 2 * t * cached(shape) * c * 2
    return b * (2 * t * e * 3 * c + products + 2 * t * c * e)


def floor_bytes(shape: tuple[int, ...]) -> int:
    """The bytes the operation moves at least, as flops() counts what its math needs: x and
    the weights read, Q, K and V written by the QKV projection and read by the attention
    (after a KV cache, the caches read once too), O written by it and read by the output
    projection, y written (fp16). Not S and P: the fused forms and SDPA never write them
    (unfused_extra_bytes)."""
    t, c, _, e = dims(shape)
    b, _ = batch(shape)
    elements = (b * t * e + 3 * c * e + e * c  # x and the weights
                + 2 * b * cached(shape) * c  # the caches' keys and values
                + 2 * b * (t * 3 * c + t * c)  # QKV and O, each written and read
                + b * t * e)  # y
    return 2 * elements


def unfused_extra_bytes(shape: tuple[int, ...]) -> int:
    """What the unfused chain (ours and torch's as written) moves beyond floor_bytes: S and P,
    H x T x (S' + T) a sequence, each written and read (fp16)."""
    t, _, h, _ = dims(shape)
    b, _ = batch(shape)
    return 2 * 2 * b * 2 * h * t * (cached(shape) + t)


def floor_ms(shape: tuple[int, ...], rates: dict[str, float]) -> float:
    """The operation's flops at the peak rate or its floor_bytes at the copy bandwidth, the
    longer."""
    return roofline_ms(flops(shape), floor_bytes(shape), rates)


class AttentionData(mlp.CheckedOutputs):
    """x, w_qkv, w_out (after a KV cache also the caches, B x H x S' x D), the temporaries
    QKV, S, P, O, y (fp16) and the fp32 reference."""

    def __init__(self, torch, shape: tuple[int, ...], seed: int = 0):
        self.torch = torch
        t, c, h, e = dims(shape)
        b, self.causal = batch(shape)
        self.heads, self.sequences = h, b
        self.scale = (c // h) ** -0.5
        gen = torch.Generator(device="cuda").manual_seed(seed)

        def rand(size, scale=1.0):
            return (torch.randn(size, generator=gen, device="cuda", dtype=torch.float32)
                    * scale).half()

        self.x = rand((b, t, e))
        self.w_qkv = rand((3 * c, e), e ** -0.5)  # q, k, v stay O(1)
        self.w_out = rand((e, c), c ** -0.5)
        self.caches = tuple(rand((b, h, cached(shape), c // h)) for _ in "kv") \
            if cached(shape) else ()

        def empty(*size):
            return torch.empty(size, device="cuda", dtype=torch.float16)

        scores = (b * h, t, cached(shape) + t)
        self.qkv, self.s, self.p = empty(b * t, 3 * c), empty(*scores), empty(*scores)
        self.o, self.y = empty(b * t, c), empty(b, t, e)
        self.parts: tuple = ()  # keys split after a cache: the splits' partial O and Stats
        if cached(shape) and (att := fused_spec(shape).attention).splits > 1:
            self.parts = tuple(torch.empty(att.parts_rows, c, device="cuda") for _ in "os")
        from tilesync.transforms.graph.graph_to_stages import (
            attention_bindings,
            fused_attention_bindings,
        )

        self.binds = attention_bindings(attention_match(shape))
        splits = fused_spec(shape).attention.splits if cached(shape) else 1
        self.fused_binds = fused_attention_bindings(attention_match(shape), splits)
        self.shape = shape
        self.tma_configs: dict[bool, dict[str, Any]] = {}  # per family, filled when first run
        from tilesync.runtime.tensor_map import TensorMapCache

        self.tensor_maps = TensorMapCache()  # each buffer's maps encoded once
        self.ref = self._chain(self.x.float(), self.w_qkv.float(), self.w_out.float(),
                               [cache.float() for cache in self.caches])
        torch.cuda.synchronize()

    def _heads(self, z):
        """B x T x C viewed as B x H x T x D."""
        b, t, c = z.shape
        return z.view(b, t, self.heads, c // self.heads).transpose(1, 2)

    def _merged(self, o):
        b, _, t, _ = o.shape
        return o.transpose(1, 2).reshape(b, t, -1)

    def _kv(self, x, w_qkv, caches):
        """q, k, v as heads; after a KV cache k and v each cat([cache, new], dim=-2)."""
        q, k, v = map(self._heads, self.torch.nn.functional.linear(x, w_qkv).chunk(3, dim=-1))
        if caches:
            k, v = (self.torch.cat([cache, new], dim=-2) for cache, new in zip(caches, (k, v),
                                                                             strict=True))
        return q, k, v

    def _chain(self, x, w_qkv, w_out, caches=()):
        F = self.torch.nn.functional
        q, k, v = self._kv(x, w_qkv, caches)
        scores = q @ k.transpose(-2, -1) * self.scale
        if self.causal:
            t = scores.shape[-1]
            future = self.torch.ones(t, t, dtype=self.torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        p = self.torch.softmax(scores, dim=-1)
        return F.linear(self._merged(p @ v), w_out)

    def poisoned(self) -> tuple:
        return (self.qkv, self.s, self.p, self.o, self.y, *self.parts)

    def kernel_args(self, fused: bool = False) -> dict[str, list]:
        """Each stage's arguments, as graph-to-stages binds them (attention_bindings: the
        function's inputs x, w_qkv, w_out; its temporaries QKV, S, P, O; its result y;
        `fused`: fused_attention_bindings, whose temporaries are QKV and O)."""
        temps = (self.qkv, self.o, *self.parts) if fused else (self.qkv, self.s, self.p, self.o)
        values = {"input": (self.x, self.w_qkv, self.w_out, *self.caches), "temp": temps,
                  "result": (self.y,)}
        binds = self.fused_binds if fused else self.binds
        tensors = {stage: [values[b.kind.data][b.values[0]] for b in binds]
                   for stage, binds in binds.items()}
        if fused not in self.tma_configs:  # the chain's shapes the fused kernel may refuse
            spec = fused_spec(self.shape) if fused else attention_spec(self.shape)
            self.tma_configs[fused] = {cfg.name: cfg for cfg in spec.gemms
                                       if cfg.warp_specialized}
        if self.tma_configs[fused]:  # a warp-specialized GEMM takes its operands' TMA maps
            from tilesync.harness.runner import tensor_map_args

            for stage, cfg in self.tma_configs[fused].items():
                tensors[stage] = tensor_map_args(cfg, tensors[stage], self.tensor_maps)
        return tensors

    def torch_chain(self):
        """The chain as written, in fp16: what the front end's pattern matches."""
        return self._chain(self.x, self.w_qkv, self.w_out, self.caches)

    def torch_sdpa(self):
        """The same with torch's fused attention between the two linears (after a KV cache
        its flash-decoding kernel)."""
        F = self.torch.nn.functional
        q, k, v = self._kv(self.x, self.w_qkv, self.caches)
        o = F.scaled_dot_product_attention(q, k, v, scale=self.scale, is_causal=self.causal)
        return F.linear(self._merged(o), self.w_out)


def mode_form(entry: dict[str, Any], data: AttentionData, name: str):
    """One mode, its stages proved, ready to time (stage_bench.proved_form)."""
    fused = entry["job"][1].startswith(FUSED)
    return stage_bench.proved_form(entry, data, data.kernel_args(fused), name,
                                   fused_stages(data.shape) if fused else STAGES)


def attention_benchmarks(shapes=SHAPES, warmup: int = 5, reps: int = 30, modes=MODES,
                         processes: int | None = None,
                         cache_dir: str | Path | None = CACHE_DIR) -> dict[str, Any]:
    """Time every mode of every shape; see the module docstring. Needs torch and a GPU."""
    from tilesync.runtime.device import get_device

    started = time.perf_counter()
    device = get_device()
    target = target_for_device(device.arch)
    jobs = [(shape, mode, False) for shape in shapes for mode in modes_for(shape, modes)]
    torch, compiled, result = stage_bench.start_run(
        "attention", jobs, compile_jobs, attention_cache(cache_dir) if cache_dir else None,
        target, processes, device.sm_count, warmup, reps, modes, VERIFY_SMS)
    rates = result["rates"]
    lost: str | None = None  # a CUDA error: the context is gone, later GPU work is skipped
    for shape in shapes:
        t, c, h, e = dims(shape)
        b, causal = batch(shape)
        row: dict[str, Any] = {"shape": shape_label(shape), "T": t, "C": c, "H": h, "E": e,
                               "flops": flops(shape), "floor_bytes": floor_bytes(shape),
                               "unfused_extra_bytes": unfused_extra_bytes(shape),
                               "floor_ms": floor_ms(shape, rates), "modes": {}}
        if len(shape) >= 6:
            row.update(B=b, causal=causal)
        if cached(shape):
            row.update(cached=cached(shape))
        result["rows"].append(row)
        if lost is not None:
            row["skipped"] = lost
            continue
        data = AttentionData(torch, shape, seed=shape[0])
        runs = modes_for(shape, modes)
        lost = stage_bench.time_modes(
            row, list(runs), {m: compiled[(shape, m, False)] for m in runs},
            lambda entry, name, data=data: mode_form(entry, data, name),
            shape_label(shape), data, warmup, reps,
            {"torch": data.torch_chain, "torch_sdpa": data.torch_sdpa})
        del data
        torch.cuda.empty_cache()
        row["speedup"] = mlp.speedups(row["modes"])
        row["mode_choice"] = mode_choice.bench_row(
            "attention", shape, {m: compiled[(shape, m, False)] for m in runs}, row["modes"],
            device.sm_count, device.name, rates)
    if lost is not None:
        result["lost"] = lost
    settle_floors(result, _row_label)
    check_floors(result, _row_label)
    result["seconds"] = time.perf_counter() - started
    return result


def _row_label(row: dict[str, Any]) -> str:
    return row["shape"]


def fastest_library(row: dict[str, Any]) -> str | None:
    """The fastest of LIBRARY_FORMS timed at the row (the library baseline), or None."""
    timed = [form for form in LIBRARY_FORMS if "median_ms" in row["modes"].get(form, {})]
    return min(timed, key=lambda form: row["modes"][form]["median_ms"]) if timed else None


def attention_table(result: dict[str, Any]) -> str:
    check_floors(result, _row_label)
    peak, copy = floor_rates_text(result, "cuBLAS probe")
    # a result recorded before floor_bytes: its floors as recorded, S and P counted
    counted = "x, the weights, QKV and O written and read, the KV caches, y" \
        if "floor_rates" in result else "the bytes counted then (S and P written and read too)"
    lines = [
        f"self-attention (x T x E -> QKV -> q kT -> softmax -> P v per head -> out; fp16) vs "
        f"{result['library']}; {result['reps']} reps after {result['warmup']} warm-up; "
        f"{result['sms']} SMs; {result['programs_compiled']} programs compiled in "
        f"{result['compile_seconds']:.1f} s ({result['programs_cached']} cached); every "
        f"program {result['verify']}",
        "speedup = median of stream_sync (the same kernels) / the mode's; vs lib = the fastest "
        "of torch's forms (the chain as written or with scaled_dot_product_attention, eager or "
        "replayed from a CUDA graph; named on the shape's line) / the mode's; vs graph = "
        "torch's chain as written replayed from a CUDA graph / the mode's; /floor = median / "
        f"floor (the longer of the flops at {peak} and {counted} at {copy})",
        f"{'shape':<14} {'mode':<18} {'median ms':>10} {'p10-p90':>17} {'speedup':>8} "
        f"{'vs lib':>8} {'vs graph':>8} {'/floor':>7} {'TFLOP/s':>8} {'rel err':>8}",
    ]
    for row in result["rows"]:
        library = fastest_library(row)
        extra = f" (the unfused chain moves {row['unfused_extra_bytes'] / 1e6:.1f} MB more: S " \
            "and P written and read)" if row.get("unfused_extra_bytes") else ""
        named = f"; library: {library} {row['modes'][library]['median_ms']:.4f} ms" \
            if library else ""
        lines.append(f"{row['shape']:<14} floor {row['floor_ms']:.4f} ms{extra}{named}")
        if row.get("skipped"):
            lines.append(f"{'':<14} SKIPPED: {row['skipped']}")
        lines.extend(stage_bench.mode_lines(row, 14, [library or "", "torch_graph"]))
        if (line := mode_choice.table_line(row, " " * 15)) is not None:
            lines.append(line)
    if result.get("lost"):
        lines.append(f"STOPPED: {result['lost']}")
    lines.append(f"total {result['seconds']:.0f} s")
    return "\n".join(lines)


def attention_plot(result: dict[str, Any], out_dir, name: str = "attention"):
    """A PNG: per shape, each mode's and each of torch's forms' speedup over the fastest of
    torch's forms there (fastest_library, named under the shape; p10-p90 as error bars); None
    where matplotlib is missing. (stage_bench.library_plot's baseline is torch_graph: here
    SDPA is faster than the chain as written.)"""
    from tilesync.bench.report import pyplot, save_figure, speedup_bars

    plt = pyplot()
    if plt is None:
        return None
    rows = [row for row in result.get("rows", []) if fastest_library(row)]
    modes = [m for m in (*result.get("modes", MODES), *LIBRARY_FORMS)
             if any("median_ms" in row["modes"].get(m, {}) for row in rows)]
    if not rows or not modes:
        return None
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 1.2), 4.2))

    def vs_library(row, mode):
        base = row["modes"][fastest_library(row)]["median_ms"]
        rec = row["modes"].get(mode, {})
        return (base / rec["median_ms"], rec) if "median_ms" in rec else None

    speedup_bars(ax, rows, modes, vs_library)
    ax.set_xticks(range(len(rows)), [f"{row['shape']}\nvs {fastest_library(row)}"
                                     for row in rows], fontsize=8)
    ax.set_ylabel("fastest torch form's time / mode time")
    ax.set_title(f"self-attention as synchronized stages on {result['device']['name']}")
    ax.legend(fontsize=7, ncol=2)
    return save_figure(plt, fig, result, out_dir, name)


def precompile(shapes=SHAPES, target: str = "sm_90", processes: int | None = None,
               debug: bool = False) -> dict[str, Any]:
    """Fill the cache without a GPU: `python -m tilesync.bench.attention --precompile`."""
    jobs = [(s, m, debug) for s in shapes for m in modes_for(s)]
    return stage_bench.precompile(jobs, compile_jobs, attention_cache(), target, processes)


def main(argv=None) -> int:
    """`python -m tilesync.bench.attention --precompile`: fill the compile cache (no GPU)."""
    return stage_bench.precompile_main("python -m tilesync.bench.attention", precompile,
                                       GPU_TEST_SHAPES, argv)


__all__ = [
    "CAUSAL_SHAPES",
    "DECODE_SHAPES",
    "GPU_TEST_SHAPES",
    "MODES",
    "SHAPES",
    "AttentionData",
    "attention_benchmarks",
    "attention_cache",
    "attention_match",
    "attention_plot",
    "attention_spec",
    "attention_table",
    "compile_job",
    "compile_jobs",
    "fastest_library",
    "floor_bytes",
    "floor_ms",
    "flops",
    "fused_stages",
    "graph_text",
    "modes_for",
    "precompile",
    "stage_module",
    "unfused_extra_bytes",
]


if __name__ == "__main__":
    sys.exit(main())
