"""The attention benchmark's programs (bench/attention.py), without a GPU: the graph function
is the front end's pattern, every mode's program is proved by sync-verify with the guarantee it
names, and compiles to PTX that nvJitLink accepts (compile_job validates it); the floor's
arithmetic. The GPU test is test_attention_gpu.py."""

from __future__ import annotations

import pytest

from tilesync.api import lower
from tilesync.bench import attention
from tilesync.dialects import sync

PROGRESS = {"row+pdl": "programmatic dependent launch", "tile+pdl": "programmatic dependent "
            "launch", "row+wait_kernel": "wait-kernel", "row+one_launch": "one launch",
            "tile+one_launch": "one launch"}


def test_the_bench_shapes_match_the_pattern():
    for shape in attention.SHAPES + attention.CAUSAL_SHAPES + attention.GPU_TEST_SHAPES:
        if attention.cached(shape):  # the fused program's alone: test_decoding_*
            continue
        spec = attention.attention_spec(shape)
        tokens, width, heads, model = attention.dims(shape)
        b, causal = attention.batch(shape)
        d = width // heads
        assert spec.heads == heads and spec.head_width == d
        assert spec.sequences == b and spec.tokens == tokens and spec.softmax.causal == causal
        # causal: P · v's k-loop of a tile ends at its last row's key
        assert spec.context.triangular_a == (tokens if causal else 0)
        assert spec.scores.triangular_c == (tokens if causal else 0)  # masked tiles skipped
        assert (spec.qkv.M, spec.qkv.N, spec.qkv.K) == (b * tokens, 3 * width, model)
        # the heads one under another: [B·]H·T rows of q · kᵀ and P · v, a head's D columns
        assert (spec.scores.M, spec.scores.N, spec.scores.K) == (b * heads * tokens, tokens, d)
        assert (spec.softmax.rows, spec.softmax.cols) == (b * heads * tokens, tokens)
        # P · v: O as [B·]T x C, the heads side by side (a tile one head's)
        assert (spec.context.M, spec.context.N, spec.context.K) == (b * tokens, width, tokens)
        assert d % spec.context.tile[1] == 0
        assert (spec.out.M, spec.out.N, spec.out.K) == (b * tokens, model, width)


def test_the_paper_shapes_are_gpt3_and_llama_under_8_way_tensor_parallelism():
    labels = [attention.shape_label(shape) for shape in attention.HEAD_SHAPES]
    assert labels == [f"T={t} H={h}x128 E={e}" for h, e in ((12, 12288), (8, 8192))
                      for t in (512, 1024, 2048)]


def test_projections_over_a_model_width_are_the_tma_gemms():
    one_head = attention.attention_spec(attention.ONE_HEAD_SHAPES[0])
    heads = attention.attention_spec(attention.HEAD_SHAPES[0])
    assert (one_head.qkv.tile[1], one_head.qkv.stages) == (64, 3)  # K = 128: 2 k-steps
    assert not one_head.qkv.warp_specialized
    # K = 12288: the TMA GEMM, the stages that fit beside its staging buffer; at T = 512 the
    # QKV GEMM's 4 x 24 tiles of 192 fit one wave where 4 x 36 of 128 take two
    assert heads.qkv.warp_specialized and heads.qkv.sync_hooks and heads.qkv.tma_store
    assert (heads.qkv.tile[1], heads.qkv.stages) == (192, 4)
    assert heads.out.warp_specialized and (heads.out.tile[1], heads.out.stages) == (128, 6)


def test_a_projection_is_as_wide_as_leaves_the_fewest_idle_slots():
    from tilesync.transforms.graph.graph_to_stages import projection_width

    widths = {attention.shape_label(shape): (spec.qkv.tile[1], spec.out.tile[1])
              for shape in attention.HEAD_SHAPES
              for spec in [attention.attention_spec(shape)]}
    # GPT-3 QKV (4608 wide): 512 rows 2 -> 1 wave at 192, 2048 rows 5 -> 3 waves; 1024 rows:
    # 3 waves of 128 against 2 of 192, a tie that keeps the narrower. The output GEMMs'
    # waves never pay for a wider tile. LLaMA QKV (3072): 1024 rows 2 waves -> 1.
    assert widths == {"T=512 H=12x128 E=12288": (192, 128), "T=1024 H=12x128 E=12288": (128, 128),
                      "T=2048 H=12x128 E=12288": (192, 128), "T=512 H=8x128 E=8192": (128, 128),
                      "T=1024 H=8x128 E=8192": (192, 128), "T=2048 H=8x128 E=8192": (128, 128)}
    assert projection_width(128, 4608, 128) == 128  # one tile row: every width one wave
    assert projection_width(8 * 128, 128 * 132 * 2, 128) == 128  # whole waves at 128


def test_p_v_takes_one_block_an_sm_and_the_narrow_tile_where_a_wave_holds_it():
    from tilesync.analysis.occupancy import blocks_per_sm
    from tilesync.kernels.config import H100_SMS

    widths = {}
    for shape in attention.SHAPES:
        context = attention.attention_spec(shape).context
        widths[attention.shape_label(shape)] = context.tile[1]
        tiles = context.grid[0] * context.grid[1]
        assert tiles <= H100_SMS or context.tile[1] == 32
        # its ring alone keeps a second block off the SM (under PDL two would share it)
        assert blocks_per_sm(128, 0, context.shared_bytes).blocks_per_sm == 1
    # the heads' grids (8-12 heads of T / 128 tile rows) take more than a wave at 16 wide
    assert widths == {"T=512 C=128": 16, "T=1024 C=128": 16, "T=2048 C=128": 16,
                      "T=4096 C=128": 32, **{attention.shape_label(shape): 32
                                             for shape in attention.HEAD_SHAPES}}


def test_the_floor_is_the_operations_not_the_unfused_chains():
    """The floor's bytes are what the operation must move, as flops() counts what its math
    needs: the fused forms and SDPA never write S and P, so they are not in it (with them, SDPA
    ran below its floor: attention-causal-nvidia-h200.json, 0.952 of it at T=2048); the unfused
    chain's extra traffic is counted apart."""
    for shape in (*attention.SHAPES, *attention.CAUSAL_SHAPES, *attention.DECODE_SHAPES):
        t, c, h, e = attention.dims(shape)
        b, _ = attention.batch(shape)
        s = attention.cached(shape)
        qkv_and_o = 2 * b * (3 * t * c + t * c)  # each written once and read once
        assert attention.floor_bytes(shape) == 2 * (
            b * t * e + 3 * c * e + e * c + 2 * b * s * c + qkv_and_o + b * t * e)
        s_and_p = 2 * b * h * t * (s + t)
        assert attention.unfused_extra_bytes(shape) == 2 * 2 * s_and_p


def test_flops_and_floor():
    t, c = 1024, 128
    assert attention.flops((t, c)) == 2 * t * c * (3 * c) + 2 * (2 * t * t * c) + 2 * t * c * c
    rates = {"peak_tflops": 1e-9, "copy_gbps": 1e9}  # flops bound: 1 flop a ms
    assert attention.floor_ms((t, c), rates) == pytest.approx(attention.flops((t, c)))
    rates = {"peak_tflops": 1e9, "copy_gbps": 1e-6}  # bytes bound: 1 byte a ms
    # x, w_qkv, w_out; QKV and O each written and read; y: the operation's, not S and P
    elements = t * c + 4 * c * c + 2 * (3 * t * c + t * c) + t * c
    assert attention.floor_ms((t, c), rates) == pytest.approx(2 * elements)
    assert attention.unfused_extra_bytes((t, c)) == 2 * 2 * (2 * t * t)  # S, P written, read


def test_flops_and_floor_with_heads():
    t, c, h, e = 512, 1536, 12, 12288
    # projections over E; each head's q · kᵀ and P · v: T x T x D, H of them (T x T x C)
    assert attention.flops((t, c, h, e)) == 2 * t * e * 3 * c + 2 * 2 * t * t * c + 2 * t * c * e
    rates = {"peak_tflops": 1e9, "copy_gbps": 1e-6}
    elements = t * e + 4 * c * e + 2 * (3 * t * c + t * c) + t * e
    assert attention.floor_ms((t, c, h, e), rates) == pytest.approx(2 * elements)
    assert attention.floor_bytes((t, c, h, e)) == 2 * elements
    assert attention.unfused_extra_bytes((t, c, h, e)) == 2 * 2 * (2 * h * t * t)


def test_flops_and_floor_of_a_causal_batch():
    t, c, h, e, b = 512, 1536, 12, 12288, 4
    # B sequences; the causal mask needs half the products with the keys and values
    assert attention.flops((t, c, h, e, b, True)) == \
        b * (2 * t * e * 3 * c + 2 * t * t * c + 2 * t * c * e)
    assert attention.flops((t, c, h, e, b, False)) == b * attention.flops((t, c, h, e))
    rates = {"peak_tflops": 1e9, "copy_gbps": 1e-6}  # the weights once, the rest B times
    elements = b * t * e + 4 * c * e + 2 * b * (3 * t * c + t * c) + b * t * e
    assert attention.floor_ms((t, c, h, e, b, True), rates) == pytest.approx(2 * elements)
    assert attention.shape_label((t, c, h, e, b, True)) == "T=512 H=12x128 E=12288 B=4 causal"


@pytest.mark.parametrize(("shape", "mode"), [
    (shape, mode) for shape in attention.GPU_TEST_SHAPES for mode in attention.modes_for(shape)],
    ids=lambda value: value if isinstance(value, str) else attention.shape_label(value))
def test_every_mode_is_proved_with_its_guarantee(mode, shape):
    module = attention.stage_module(shape, mode)
    lower(module, attention.mode_passes(mode))
    stages = {op.sym_name.data: op for op in module.walk() if isinstance(op, sync.StageOp)}
    launches = [op for op in module.walk() if isinstance(op, sync.LaunchOp)]
    fused = mode.startswith(attention.FUSED)
    names = attention.fused_stages(shape) if fused else attention.STAGES
    assert list(stages) == list(names)
    assert all(s.attributes["sync.verified"].data == "proved" for s in stages.values())
    if mode.removeprefix(attention.FUSED) == "stream_sync":
        assert {op.stream.value.data for op in launches} == {0}
        assert not any(op.pdl is not None and op.pdl.value.data for op in launches)
    else:
        for name in names[1:]:
            assert PROGRESS[mode.removeprefix(attention.FUSED)] in \
                stages[name].attributes["sync.progress"].data
    together = mode.endswith("one_launch")  # every stage joins the first's launch
    assert [bool(op.fused.value.data) for op in launches] == [False] + [together] * (
        len(launches) - 1)


@pytest.mark.parametrize("shape", attention.GPU_TEST_SHAPES, ids=attention.shape_label)
def test_one_mode_compiles_to_ptx_nvjitlink_accepts(shape):
    mode = attention.modes_for(shape, ("row+pdl", "fused:row+pdl"))[0]
    stages = attention.fused_stages(shape) if mode.startswith(attention.FUSED) else \
        attention.STAGES
    entry = attention.compile_job((shape, mode, False), "sm_90")
    assert entry["target"] == "sm_90a" and set(entry["ptx_by_module"]) == {
        f"{name}_module" for name in stages}
    assert all(name in entry["resources"] for name in stages)


def test_decoding_shapes_are_the_papers_token_generation():
    """One new token for B = 1 or 4 sequences after KV caches of 512-4096, GPT-3's and LLaMA's
    heads; the fused program only; the floor reads the caches once."""
    labels = [attention.shape_label(shape) for shape in attention.DECODE_SHAPES]
    assert labels[:3] == [f"T=1 H=12x128 E=12288 S'={s}" for s in (512, 2048, 4096)]
    assert labels[3] == "T=1 H=12x128 E=12288 B=4 S'=512" and len(labels) == 12
    for shape in (*attention.DECODE_SHAPES, attention.GPU_TEST_SHAPES[-1]):
        assert attention.modes_for(shape) == attention.FUSED_MODES
        spec = attention.fused_spec(shape)
        b, s = attention.batch(shape)[0], attention.cached(shape)
        splits = spec.attention.splits
        assert spec.attention.cached == s and spec.attention.grid[:2] == (b * splits,
                                                                           spec.heads)
        assert attention.fused_stages(shape) == (("qkv", "attention", "combine", "out")
                                                 if splits > 1 else attention.FUSED_STAGES)
        assert (spec.qkv.M, spec.out.M) == (b, b)
        with pytest.raises(Exception, match="runs as the fused kernel"):
            attention.attention_spec(shape)
    # the keys split so that the (sequence, head) pairs fill the SMs about once (at most as
    # many splits as key blocks, none empty): GPT-3's 12 heads, then LLaMA's 8, B = 1 and 4,
    # S' = 512, 2048, 4096 (5, 17, 33 key blocks of 128)
    assert [attention.fused_spec(shape).attention.splits
            for shape in attention.DECODE_SHAPES] == [5, 9, 11, 3, 3, 3,
                                                      5, 17, 17, 5, 5, 5]
    t, c, h, e, b, _, s = attention.DECODE_SHAPES[4]
    rates = {"peak_tflops": 1e9, "copy_gbps": 1e-6}  # bytes decide
    elements = b * t * e + 4 * c * e + 2 * b * s * c + 2 * b * 4 * t * c + b * t * e
    assert attention.floor_ms(attention.DECODE_SHAPES[4], rates) == pytest.approx(2 * elements)
    assert attention.unfused_extra_bytes(attention.DECODE_SHAPES[4]) == \
        2 * 2 * b * 2 * h * t * (s + t)
    assert attention.flops(attention.DECODE_SHAPES[4]) == \
        b * (2 * e * 3 * c + 2 * (s + 1) * c * 2 + 2 * c * e)


def test_each_stage_takes_the_tensors_graph_to_stages_binds():
    from types import SimpleNamespace

    from tilesync.transforms.graph.graph_to_stages import (
        attention_bindings,
        fused_attention_bindings,
    )

    match = attention.attention_match(attention.GPU_TEST_SHAPES[0])
    data = SimpleNamespace(x="x", w_qkv="w_qkv", w_out="w_out", caches=(), parts=(),
                           qkv="QKV", s="S", p="P", o="O", y="y",
                           tma_configs={False: {}, True: {}},
                           binds=attention_bindings(match),
                           fused_binds=fused_attention_bindings(match))
    assert attention.AttentionData.kernel_args(data) == {
        "qkv": ["x", "w_qkv", "QKV"], "scores": ["QKV", "QKV", "S"], "softmax": ["S", "P"],
        "context": ["P", "QKV", "O"], "out": ["O", "w_out", "y"]}
    # the fused kernel reads q, k and v as three arguments of the one QKV; no S or P
    assert attention.AttentionData.kernel_args(data, fused=True) == {
        "qkv": ["x", "w_qkv", "QKV"], "attention": ["QKV", "QKV", "QKV", "O"],
        "out": ["O", "w_out", "y"]}
    # after a KV cache the fused kernel also reads the caches, the function's inputs 3 and
    # 4; its keys split, it writes the splits' partial O and Stats, which @combine merges
    decoding = attention.attention_match(attention.GPU_TEST_SHAPES[-1])
    data.caches, data.fused_binds = ("k_cache", "v_cache"), fused_attention_bindings(decoding)
    assert attention.AttentionData.kernel_args(data, fused=True)["attention"] == [
        "QKV", "QKV", "QKV", "O", "k_cache", "v_cache"]
    data.parts, data.fused_binds = ("Parts", "Stats"), fused_attention_bindings(decoding, 5)
    split = attention.AttentionData.kernel_args(data, fused=True)
    assert split["attention"] == ["QKV", "QKV", "QKV", "Parts", "k_cache", "v_cache", "Stats"]
    assert split["combine"] == ["Parts", "Stats", "O"]


def test_the_fused_programs_projections_take_the_tiles_their_waves_want():
    # GPT-3's 12 heads at T = 1024: the chain's QKV tiles (projection_width, 64-wide k-steps)
    # take three waves of 132, the fused program's 128 x 144 two
    shape = (1024, 1536, 12, 12288)
    chain, fused = attention.attention_spec(shape), attention.fused_spec(shape)
    waves = [-(-cfg.tiles // 132) for cfg in (chain.qkv, fused.qkv)]
    assert (chain.qkv.tile[:2], fused.qkv.tile[:2], waves) == ((128, 128), (128, 144), [3, 2])
    assert fused.qkv.sync_hooks and not fused.qkv.persistent and fused.qkv.tma_store
    assert fused.out.tile[:2] == (128, 256)


def test_causal_tiles_beyond_a_wave_are_handed_out_heaviest_first():
    # GPT-3's 12 causal heads at T = 2048: 16 blocks of 128 queries a head, one an SM (their
    # shared memory), 192 > 132: the last query block of every head first, then the one before
    ordered = attention.stage_module((2048, 1536, 12, 12288, 1, True), "fused:row+pdl")
    (stage,) = [op for op in ordered.walk()
                if isinstance(op, sync.StageOp) and op.sym_name.data == "attention"]
    table = stage.order.values
    assert stage.order.kind.data == "table" and sorted(table) == list(range(192))
    assert [divmod(t, 12) for t in table[:13]] == [(15, h) for h in range(12)] + [(14, 0)]
    assert [divmod(t, 12) for t in table[-2:]] == [(0, 10), (0, 11)]
    # its blocks in one wave (8 heads; GPT-2's 64-query blocks, several an SM): no order
    for shape in ((2048, 1024, 8, 8192, 1, True), (1024, 768, 12, 768, 1, True),
                  (2048, 1536, 12, 12288)):
        module = attention.stage_module(shape, "fused:row+pdl")
        assert all(op.order is None for op in module.walk() if isinstance(op, sync.StageOp))


SHAPE_GRID = [(64, 64, 1, 64, 3, True), (128, 128, 2, 128, 2, False),
              (256, 192, 3, 192, 2, True), (512, 128, 2, 256, 3, True),
              (256, 64, 1, 128, 4, False), (128, 256, 4, 512, 2, True)]
"""(T, C, H, E, B, causal) beyond the bench's: one and several tile rows a head (BM 64 and
128), one to four heads, two to four sequences, x as wide as C and wider (the TMA QKV GEMM),
causal or not."""


@pytest.mark.parametrize("shape", SHAPE_GRID, ids=attention.shape_label)
@pytest.mark.parametrize("mode", ["row+pdl", "tile+pdl", "fused:row+pdl", "fused:tile+pdl"])
def test_batched_and_causal_programs_are_proved(mode, shape):
    module = attention.stage_module(shape, mode)
    lower(module, attention.mode_passes(mode))
    stages = [op for op in module.walk() if isinstance(op, sync.StageOp)]
    count = len(attention.FUSED_STAGES if mode.startswith(attention.FUSED) else attention.STAGES)
    assert [s.attributes["sync.verified"].data for s in stages] == ["proved"] * count


@pytest.mark.parametrize("shape", [(256, 128, 2, 512, 2, True), (512, 1536, 12, 512),
                                   (256, 64, 1, 128, 4, False)], ids=attention.shape_label)
@pytest.mark.parametrize("operand", [0, 1, 2])
def test_a_fused_dependency_that_misses_a_read_is_refused(shape, operand):
    """The fused program's dependencies have teeth: q, k or v read from QKV tile rows its
    dependency does not name (every block's, or every key block's, taken to be the first
    tile row's) is refused by sync-verify against the kernel's loads."""
    from xdsl.ir.affine import AffineExpr, AffineMap

    from tilesync.contract import CompileError

    module = attention.stage_module(shape, "fused:row+pdl")
    (dep,) = [op for op in module.walk() if isinstance(op, sync.DependencyOp)
              and op.consumer.string_value() == "attention" and op.operand.data == operand]
    tiles = dep.tiles_map
    wrong = AffineMap(tiles.num_dims, tiles.num_symbols,
                      (AffineExpr.constant(0), tiles.results[1]))
    dep.properties["tiles"] = type(dep.tiles)(wrong)
    with pytest.raises(CompileError, match=r"consumer tile .* of @attention: .* reads operand "
                                           rf"{operand}"):
        lower(module, attention.mode_passes("fused:row+pdl"))


@pytest.mark.parametrize("shape", [s for s in SHAPE_GRID if s[4] > 1], ids=attention.shape_label)
def test_a_key_dependency_without_its_sequence_is_refused(shape):
    """The check has teeth on every batched shape: q · kᵀ's k dependency with the sequence's
    first tile row dropped (every tile reading the first sequence's keys, as one sequence
    would) is refused by sync-verify, against the kernel's loads."""
    from xdsl.ir.affine import AffineExpr, AffineMap

    from tilesync.contract import CompileError

    module = attention.stage_module(shape, "row+pdl")
    (dep,) = [op for op in module.walk() if isinstance(op, sync.DependencyOp)
              and op.consumer.string_value() == "scores" and op.operand.data == 1]
    tiles = dep.tiles_map
    wrong = AffineMap(tiles.num_dims, tiles.num_symbols,
                      (AffineExpr.dimension(1), *tiles.results[1:]))
    dep.properties["tiles"] = type(dep.tiles)(wrong)
    with pytest.raises(CompileError, match=r"consumer tile .* of @scores: .* reads operand 1"):
        lower(module, attention.mode_passes("row+pdl"))


def _library_result() -> dict:
    timing = {"p10_ms": 0.01, "p90_ms": 0.05, "rel_error": 1e-3}
    modes = {"stream_sync": {**timing, "median_ms": 0.03},
             "row+pdl": {**timing, "median_ms": 0.02, "policy": "RowSync"},
             "torch_eager": {**timing, "median_ms": 0.05},
             "torch_graph": {**timing, "median_ms": 0.04},
             "torch_sdpa_eager": {**timing, "median_ms": 0.01},  # the fastest of torch's
             "torch_sdpa_graph": {**timing, "median_ms": 0.012}}
    from tilesync.bench import mlp

    row = {"shape": "T=512 C=128", "T": 512, "C": 128, "H": 1, "E": 128, "floor_ms": 0.005,
           "flops": 10**9, "modes": modes, "speedup": mlp.speedups(modes)}
    return {"experiment": "attention", "library": "torch", "reps": 3, "warmup": 1, "sms": 132,
            "programs_compiled": 2, "compile_seconds": 1.0, "programs_cached": 0,
            "verify": "proved", "seconds": 2.0, "device": {"name": "test"},
            "rates": {"peak_tflops": 700.0, "copy_gbps": 3000.0}, "rows": [row],
            "modes": ["stream_sync", "row+pdl"]}


def test_the_library_baseline_is_torchs_fastest_form():
    """"vs lib" is the fastest of torch's four forms at the shape (here SDPA eager, faster than
    the chain as written in a graph), named on the shape's line; "vs graph" stays the chain as
    written replayed from a CUDA graph."""
    result = _library_result()
    assert attention.fastest_library(result["rows"][0]) == "torch_sdpa_eager"
    table = attention.attention_table(result)
    assert "vs lib" in table.splitlines()[2]
    assert "T=512 C=128    floor 0.0050 ms; library: torch_sdpa_eager 0.0100 ms" in table
    (line,) = [ln for ln in table.splitlines() if " row+pdl " in ln]
    speedup, vs_lib, vs_graph = (float(v) for v in line.split()[3:6])
    assert (speedup, vs_lib, vs_graph) == (1.5, 0.5, 2.0)


def test_the_attention_plot_is_against_torchs_fastest_form(drawn_bars):
    bars, ax = drawn_bars(attention.attention_plot, _library_result())
    assert bars[(0, "row+pdl")] == pytest.approx(0.5)  # 0.01 ms of SDPA eager over 0.02
    assert bars[(0, "torch_sdpa_eager")] == pytest.approx(1.0)
    assert bars[(0, "torch_graph")] == pytest.approx(0.25)
    assert ax.xticklabels == ["T=512 C=128\nvs torch_sdpa_eager"]
    assert "fastest torch form" in ax.ylabel


def test_the_bench_settles_its_floors_on_the_run(monkeypatch):
    """attention_benchmarks records each row's floor_bytes (and the unfused chain's extra) and
    settles the floors after the run at its highest measured rate (report.settle_floors): SDPA
    faster than a floor at cuBLAS's probe sets the peak."""
    from types import SimpleNamespace

    from tilesync.bench import mode_choice, stage_bench
    from tilesync.runtime import device

    shape = (512, 128)
    flops = attention.flops(shape)
    probe = {"peak_tflops": 1.0, "copy_gbps": 1e6}  # a floor of flops / 1e12 s: far too slow
    sdpa_ms = flops / 2e12 * 1e3  # at 2 TFLOP/s

    def start_run(experiment, jobs, *args, **kwargs):
        return (SimpleNamespace(cuda=SimpleNamespace(empty_cache=lambda: None)),
                {job: {} for job in jobs},
                {"experiment": experiment, "rates": dict(probe), "rows": []})

    def time_modes(row, modes, entries, prepare, label, data, warmup, reps, libraries):
        row["modes"].update({"stream_sync": {"median_ms": 2 * sdpa_ms},
                             "torch_sdpa_eager": {"median_ms": sdpa_ms}})

    monkeypatch.setattr(device, "get_device",
                        lambda: SimpleNamespace(arch="sm_90", sm_count=132, name="test"))
    monkeypatch.setattr(stage_bench, "start_run", start_run)
    monkeypatch.setattr(stage_bench, "time_modes", time_modes)
    monkeypatch.setattr(attention, "AttentionData", lambda torch, shape, seed: SimpleNamespace(
        torch_chain=None, torch_sdpa=None))
    monkeypatch.setattr(mode_choice, "bench_row", lambda *args, **kwargs: {})
    result = attention.attention_benchmarks((shape,), modes=("stream_sync",), cache_dir=None)
    (row,) = result["rows"]
    assert row["floor_bytes"] == attention.floor_bytes(shape)
    assert row["unfused_extra_bytes"] == attention.unfused_extra_bytes(shape)
    assert result["rates"] == probe  # the probes as measured (the cost model's rates)
    rates = result["floor_rates"]
    assert rates["peak_tflops"] == pytest.approx(2.0)
    assert rates["peak_from"] == "T=512 C=128 torch_sdpa_eager"
    assert row["floor_ms"] == pytest.approx(sdpa_ms)
