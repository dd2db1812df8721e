"""The torch front end's attention, conv-chain and SwiGLU MLP pieces on the GPU, run our way
(forced, strict; a conv chain in each of its forms, cp.async and im2col TMA convs; attention
with and without GPT's 1/sqrt(width) on its scores, and causal with heads over a batch as
GPT-2 and nanoGPT write it; the MLP on the TMA GEMMs from 64 rows, a
partial row of tiles too, and on the wgmma ones below; GPT-2's MLP and attention as Hugging
Face writes them, through Conv1D's K x N weights): they match an fp32
reference computed from the same fp16 inputs (and eager torch) on fresh inputs with every
temporary and result filled with NaN before the kernels run, 20 runs back to back without a
memset, a CUDA graph capture replayed on new data into a poisoned output, and the second
compile comes from the cache; a Conv1D weight changed in place is read with its new values
(the runner transposes it again)."""

from __future__ import annotations

import copy
import math

import pytest

torch = pytest.importorskip("torch")

from torch_checks import relative_error  # noqa: E402

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.examples.torch_models import (  # noqa: E402
    HFGPT2MLP,
    BasicBlock,
    CausalSelfAttention,
    Conv1D,
    GPT2Attention,
    HFGPT2Attention,
    LlamaMLP,
    OneHeadAttention,
)
from tilesync.frontend.torch import compiler  # noqa: E402
from tilesync.frontend.torch.ops import StageRunner  # noqa: E402

TOL = 2e-2
RUNS = 20


pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("fp32_on_cuda")]


@pytest.fixture
def poisoned(monkeypatch):
    """Every temporary and result of a stage program starts as NaN: an element a kernel reads
    before one writes it, or leaves unwritten, shows up as a NaN in the output."""
    new = StageRunner._new

    def filled_with_nan(self, *args, **kwargs):
        return new(self, *args, **kwargs).fill_(float("nan"))

    monkeypatch.setattr(StageRunner, "_new", filled_with_nan)


class ConvChain(torch.nn.Module):
    def __init__(self, channels: int, relu: bool, bias: bool):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
        self.relu = relu

    def forward(self, x):
        h = self.conv1(x)
        return self.conv2(torch.relu(h) if self.relu else h)


def _resnet_block() -> torch.nn.Module:
    """ResNet's BasicBlock in eval mode with BatchNorm statistics that fold into something."""
    block = BasicBlock(64)
    with torch.no_grad():
        for bn in (block.bn1, block.bn2):
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    return block.eval()


def _runs_our_way(model, make_input, pattern: str, tmp_path, graph_replays):
    """The checks of the module docstring for `model` (fp16, on the GPU) on inputs of
    `make_input()`; returns the compiled module."""
    inputs = [make_input()]
    compiled = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path, strict=True)
    (piece,) = compiled.report.pieces
    assert piece.choice == "tilesync" and piece.description.startswith(pattern)
    assert not piece.cached
    exact = copy.deepcopy(model).float()

    def reference(*args):  # fp32 from the same fp16 values: eager fp16 rounds as well
        return exact(*(t.float() for t in args))

    with torch.no_grad():
        out = compiled(*inputs)
        assert relative_error(out, reference(*inputs)) < TOL
        assert relative_error(out, model(*inputs)) < TOL
        # one epoch per run on the same semaphores, never reset
        batches = [[make_input()] for _ in range(RUNS)]
        outs = [compiled(*batch) for batch in batches]
        for batch, result in zip(batches, outs, strict=True):
            assert relative_error(result, reference(*batch)) < TOL

        sources = (batches[-1], [make_input()], inputs)
        for source, replayed in zip(sources, graph_replays(compiled, inputs, sources),
                                    strict=True):
            assert relative_error(replayed, reference(*source)) < TOL
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiler, "compile_entry",
                      lambda *args: pytest.fail("a cached piece was compiled again"))
        again = tt.compile(model, inputs, mode="tilesync", cache_dir=tmp_path, strict=True)
    (piece,) = again.report.pieces
    assert piece.cached
    return compiled


@pytest.mark.parametrize(("tokens", "width", "scaled"), [
    (64, 64, False),  # BM 64; P · v's 128-column tile reaches past v (the end of QKV: zeros)
    (192, 64, False),  # the last row of tiles half full: softmax posts 16 blocks, not 32
    (512, 128, False),  # 4 x 4 score tiles, two QKV column tiles
    # GPT's softmax(S / sqrt(width)): the softmax kernel scales S (a kernel that dropped the
    # scale would miss the reference by far more than TOL: S's spread is sqrt(width) x larger)
    (512, 128, True),
    (192, 64, True),
])
def test_attention_runs_our_way(tokens, width, scaled, tmp_path, poisoned, graph_replays):
    torch.manual_seed(tokens + width)
    scale = 1 / math.sqrt(width) if scaled else None
    model = OneHeadAttention(width, scale=scale).half().cuda().eval()
    pattern = "Attention" if scale is None else \
        f"Attention [{tokens} rows, {width} -> {3 * width} -> {width}, float16, scale {scale:.6g}]"
    _runs_our_way(model, lambda: torch.randn(tokens, width, dtype=torch.half, device="cuda"),
                  pattern, tmp_path, graph_replays)


@pytest.mark.parametrize(("model_class", "shape", "heads"), [
    (GPT2Attention, (2, 128, 128), 2),  # GPT-2's causal mask as masked_fill, two sequences
    (GPT2Attention, (1, 256, 192), 3),  # three heads: a tile row of q · kᵀ a head's
    (CausalSelfAttention, (3, 128, 128), 2),  # nanoGPT: scaled_dot_product_attention, causal
])
def test_causal_attention_with_heads_runs_our_way(model_class, shape, heads, tmp_path,
                                                  poisoned, graph_replays):
    torch.manual_seed(sum(shape))
    model = model_class(shape[-1], heads).half().cuda().eval()
    b, t, e = shape
    pattern = (f"Attention [{b} x {t} tokens, {heads} heads of {e // heads}, {e} -> {3 * e} -> "
               f"{e}, float16, scale {(e // heads) ** -0.5:.6g}, causal]")
    _runs_our_way(model, lambda: torch.randn(shape, dtype=torch.half, device="cuda"),
                  pattern, tmp_path, graph_replays)


@pytest.mark.parametrize("form", compiler.ATTENTION_FORMS)
@pytest.mark.parametrize(("model_class", "shape", "heads"), [
    (GPT2Attention, (2, 128, 128), 2),  # heads of 64 over two sequences, causal
    (CausalSelfAttention, (1, 256, 256), 2),  # heads of 128 (the fused kernel's 64 x 128)
])
def test_each_form_of_attention_runs_our_way(form, model_class, shape, heads, tmp_path,
                                             poisoned, graph_replays, monkeypatch):
    """Each of ATTENTION_FORMS alone (the measured choice taken out of the way): the chain and
    the fused program (QKV GEMM, one attention kernel, output GEMM) match eager, poisoned,
    on fresh inputs and from CUDA graph replays, and compile once."""
    monkeypatch.setattr(compiler, "attention_forms", lambda fn: (form,))
    torch.manual_seed(sum(shape) + heads)
    model = model_class(shape[-1], heads).half().cuda().eval()
    b, t, e = shape
    pattern = (f"Attention [{b} x {t} tokens, {heads} heads of {e // heads}, {e} -> {3 * e} -> "
               f"{e}, float16, scale {(e // heads) ** -0.5:.6g}, causal]")
    compiled = _runs_our_way(model, lambda: torch.randn(shape, dtype=torch.half, device="cuda"),
                             pattern, tmp_path, graph_replays)
    (piece,) = compiled.report.pieces
    assert not piece.variants  # one form: nothing measured between forms


@pytest.mark.parametrize(("images", "relu", "bias", "channels_last"), [
    (1, True, True, False),
    (8, True, True, True),  # the activations and filters already NHWC: no copy at the boundary
    (1, False, False, False),
])
def test_conv_chain_runs_our_way(images, relu, bias, channels_last, tmp_path, poisoned,
                                 graph_replays):
    torch.manual_seed(images)
    model = ConvChain(64, relu, bias).half().cuda().eval()
    layout = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=layout)

    def make_input():
        x = torch.randn(images, 64, 56, 56, dtype=torch.half, device="cuda")
        return x.contiguous(memory_format=layout)

    _runs_our_way(model, make_input, "Conv→ReLU→Conv" if relu else "Conv→Conv", tmp_path,
                  graph_replays)


@pytest.mark.parametrize("form", [f for forms in compiler.CONV_FORMS.values() for f in forms])
@pytest.mark.parametrize(("images", "size", "channels"), [
    (2, 16, 128),  # two column tiles of the TMA convs' 64; conv2's tiles wait across images
    (1, 56, 64),
])
def test_each_form_of_a_conv_chain_runs_our_way(form, images, size, channels, tmp_path,
                                                poisoned, graph_replays, monkeypatch):
    """Each of CONV_FORMS alone (the tuning's choice out of the way), with biases and ReLU:
    the im2col TMA convs (tile-synchronized, or persistent in stream order) take their input
    as an im2col map and their filter as a map over K x 9C (`over`), which the runner encodes
    from torch's tensors."""
    monkeypatch.setattr(compiler, "stage_forms", lambda spec, module: (form,))
    torch.manual_seed(images * size + channels)
    model = ConvChain(channels, relu=True, bias=True).half().cuda().eval()
    _runs_our_way(model, lambda: torch.randn(images, channels, size, size, dtype=torch.half,
                                             device="cuda"),
                  "Conv→ReLU→Conv", tmp_path, graph_replays)


def test_resnet_block_folds_batch_norms_and_runs_our_way(tmp_path, poisoned, graph_replays):
    torch.manual_seed(0)
    model = _resnet_block().half().cuda()
    _runs_our_way(model, lambda: torch.randn(8, 64, 56, 56, dtype=torch.half, device="cuda"),
                  "Conv→ReLU→Conv", tmp_path, graph_replays)


@pytest.mark.parametrize("rows", [
    64,  # the TMA MLP's smallest batch: 64-row tiles, 32 columns of H a GEMM1 tile
    100,  # a partial row of tiles: the TMA copies clip their loads and stores
    32,  # below TMA_MIN_ROWS: the wgmma GEMMs
    8,  # up to STREAMING_ROWS: the streaming GEMMs, a k-step of GEMM2 reading 6 tiles of H
])
def test_swiglu_mlp_runs_our_way(rows, tmp_path, poisoned, graph_replays):
    torch.manual_seed(rows)
    model = LlamaMLP(1024, 2816).half().cuda().eval()
    _runs_our_way(model, lambda: torch.randn(rows, 1024, dtype=torch.half, device="cuda"),
                  "SwiGLU MLP", tmp_path, graph_replays)


@pytest.mark.parametrize("rows", [64, 32, 16])  # the TMA GEMMs, the wgmma, the streaming
def test_swiglu_mlp_with_a_biased_down_projection_runs_our_way(rows, tmp_path, poisoned,
                                                              graph_replays):
    """The down projection's bias is the second GEMM's epilogue (drawn nonzero: a bias left
    out shows)."""
    torch.manual_seed(rows)
    model = LlamaMLP(1024, 2816)
    model.down_proj = torch.nn.Linear(2816, 1024)
    with torch.no_grad():
        model.down_proj.bias.uniform_(-1, 1)
    model = model.half().cuda().eval()
    _runs_our_way(model, lambda: torch.randn(rows, 1024, dtype=torch.half, device="cuda"),
                  "SwiGLU MLP", tmp_path, graph_replays)


def _drawn(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with its parameters drawn again (Conv1D starts its biases at zero, which would
    hide a bias the kernels leave out), scaled so that the layers keep their outputs O(1)."""
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 1 / math.sqrt(p.shape[0]))
    return model


def _sees_conv1d_weights_updated_in_place(model, compiled, make_input) -> None:
    """Every Conv1D weight of `model` changed in place, as an optimizer step or
    load_state_dict does: the compiled piece computes with the new values (its runner
    transposes each weight again on the new version), not with the transposes it kept."""
    x = make_input()
    with torch.no_grad():
        before = compiled(x)
        for module in model.modules():
            if isinstance(module, Conv1D):
                module.weight.mul_(-1.5)
        after = compiled(x)
        reference = copy.deepcopy(model).float()(x.float())
    assert relative_error(after, reference) < TOL
    assert relative_error(before, reference) > 10 * TOL  # the update changes the output


@pytest.mark.parametrize("shape", [
    (2, 64, 768),  # 128 rows: the TMA GEMMs (maps encoded over the transposed weights)
    (1, 100, 768),  # a partial row of tiles
    (1, 32, 768),  # below TMA_MIN_ROWS: the wgmma GEMMs (the transposed weights' addresses)
    (2, 2, 768),  # up to STREAMING_ROWS: the streaming GEMMs (bias and GeLU epilogues)
])
def test_hf_gpt2_mlp_runs_our_way(shape, tmp_path, poisoned, graph_replays):
    """Hugging Face's GPT2MLP (c_fc and c_proj Conv1D, tanh GeLU): the GeLU MLP piece."""
    torch.manual_seed(sum(shape))
    model = _drawn(HFGPT2MLP(3072, 768)).half().cuda().eval()

    def make_input():
        return torch.randn(shape, dtype=torch.half, device="cuda")

    b, t, e = shape
    compiled = _runs_our_way(model, make_input,
                             f"Linear→GeLU→Linear [{b * t} rows, {e} -> 3072 -> {e}, float16]",
                             tmp_path, graph_replays)
    _sees_conv1d_weights_updated_in_place(model, compiled, make_input)


@pytest.mark.parametrize(("shape", "heads"), [
    ((2, 128, 128), 2),  # two sequences of two heads
    ((1, 256, 192), 3),  # three heads: a tile row of q · kᵀ a head's
])
def test_hf_gpt2_attention_runs_our_way(shape, heads, tmp_path, poisoned, graph_replays):
    """Hugging Face's GPT2Attention's Conv1D projections (c_attn, c_proj) around GPT-2's
    causal attention (its mask buffer sliced: compiled through Dynamo)."""
    torch.manual_seed(sum(shape))
    model = _drawn(HFGPT2Attention(shape[-1], heads)).half().cuda().eval()
    b, t, e = shape

    def make_input():
        return torch.randn(shape, dtype=torch.half, device="cuda")

    pattern = (f"Attention [{b} x {t} tokens, {heads} heads of {e // heads}, {e} -> {3 * e} -> "
               f"{e}, float16, scale {(e // heads) ** -0.5:.6g}, causal]")
    compiled = _runs_our_way(model, make_input, pattern, tmp_path, graph_replays)
    _sees_conv1d_weights_updated_in_place(model, compiled, make_input)
