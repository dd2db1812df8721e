"""The torch front end's conv chain without a GPU: Conv2d → ReLU → Conv2d traced, matched,
lowered to the graph level channels last (torch permutes at the boundary), through
graph-to-stages and the cuSync passes to PTX; shapes and dtypes the kernels refuse stay with
torch, with a one-line reason."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import tilesync.frontend.torch as tt  # noqa: E402
from tilesync.contract import VERIFIED_ATTR  # noqa: E402
from tilesync.frontend.torch.compiler import (  # noqa: E402
    STAGES_PASS,
    UnsupportedError,
    compile_entry,
    fold_batch_norms,
    record_values,
)
from tilesync.frontend.torch.ops import Relayout, eager_piece  # noqa: E402
from tilesync.frontend.torch.patterns import find_pieces, graph_function  # noqa: E402


class ConvChain(torch.nn.Module):
    def __init__(self, c: int = 64, k1: int = 64, k2: int = 64, kernel: int = 3,
                 stride: int = 1, bias: bool = True):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, k1, kernel, stride=stride, padding=kernel // 2,
                                     bias=bias)
        self.relu = torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(k1, k2, 3, padding=1, bias=False)

    def forward(self, x):
        return self.conv2(self.relu(self.conv1(x)))


class FunctionalChain(torch.nn.Module):
    """The same with F.conv2d and F.relu on parameters (what Dynamo's graphs hold)."""

    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(64, 32, 3, 3))
        self.w2 = torch.nn.Parameter(torch.randn(32, 64, 3, 3))

    def forward(self, x):
        return F.conv2d(F.relu(F.conv2d(x, self.w1, None, 1, 1)), self.w2, padding=(1, 1))


def _pieces(model, inputs):
    gm = fold_batch_norms(torch.fx.symbolic_trace(model))
    record_values(gm, inputs)
    return gm, find_pieces(gm)


def test_conv_chain_is_matched_and_lowered_channels_last():
    _, (piece,) = _pieces(ConvChain().half(), [torch.randn(2, 64, 16, 16, dtype=torch.half)])
    assert piece.pattern == "Conv→ReLU→Conv" and len(piece.nodes) == 3
    assert piece.inputs[1:] == ["conv1.weight", "conv1.bias", "conv2.weight"]
    assert piece.layouts == [(0, 2, 3, 1), (0, 2, 3, 1), None, (0, 2, 3, 1)]
    text = str(graph_function(piece))
    assert ('graph.conv2d %x, %conv1_weight, %conv1_bias stride [1, 1] padding [1, 1] layout '
            '"NHWC" : (tensor<2x16x16x64xf16>, tensor<64x3x3x64xf16>, tensor<64xf16>) -> '
            'tensor<2x16x16x64xf16>') in text
    assert "graph.relu" in text and "-> tensor<2x16x16x64xf16>" in text


def test_functional_convs_are_matched():
    _, (piece,) = _pieces(FunctionalChain(), [torch.randn(1, 32, 8, 8)])
    assert piece.pattern == "Conv→ReLU→Conv"
    assert "tensor<32x3x3x64xf32>" in str(graph_function(piece))


def test_grouped_or_dilated_convs_are_no_piece():
    grouped = ConvChain()
    grouped.conv1 = torch.nn.Conv2d(64, 64, 3, padding=1, groups=2)
    dilated = ConvChain()
    dilated.conv2 = torch.nn.Conv2d(64, 64, 3, padding=2, dilation=2)
    x = torch.randn(1, 64, 8, 8)
    assert _pieces(grouped, [x])[1] == [] and _pieces(dilated, [x])[1] == []


def test_relayout_permutes_at_the_boundary():
    """The graph function's meaning in NHWC, behind Relayout, is the NCHW piece."""
    _, (piece,) = _pieces(ConvChain(32, 64, 16), [torch.randn(2, 32, 8, 8)])

    class ChannelsLast:  # what the stage program computes: NHWC in and out
        dtype = torch.float32

        def __call__(self, inputs):
            nchw = [t if t.dim() == 1 else t.permute(0, 3, 1, 2) for t in inputs]
            (out,) = eager_piece(piece.ops, nchw)
            return [out.permute(0, 2, 3, 1)]

    runner = Relayout(ChannelsLast(), piece.layouts, piece.out_layout, piece.out_info.shape)
    # small integers: every algorithm's sums are exact, whatever the memory layout
    inputs = [torch.randint(-2, 3, shape).float()
              for shape in ((2, 32, 8, 8), (64, 32, 3, 3), (64,), (16, 64, 3, 3))]
    (out,) = runner(inputs)
    assert out.shape == (2, 16, 8, 8) and out.is_contiguous()
    torch.testing.assert_close(out, eager_piece(piece.ops, inputs)[0])


def test_compiled_conv_chain_has_two_kernels_and_the_halo():
    _, (piece,) = _pieces(ConvChain().half(), [torch.randn(2, 64, 16, 16, dtype=torch.half)])
    entry = compile_entry((str(graph_function(piece, names=False)), STAGES_PASS))
    assert {"conv1_module", "conv2_module"} <= set(entry["ptx_by_module"])
    assert "wgmma.mma_async" in entry["ptx_by_module"]["conv1_module"]
    assert "ld.acquire.gpu" in entry["ptx_by_module"]["conv2_module"]  # it waits for conv1
    assert "tiles (d0, d1)[s0, s1] -> (d0 + s1 + -1, 0)" in entry["host"] and \
        'sync.verified = "proved"' in entry["host"]
    assert entry["temps"] == [(2, 16, 16, 64)]


def test_a_conv_chain_is_compiled_in_each_pipeline_that_takes_it():
    """Where it runs on a GPU a conv chain is compiled to each of CONV_FORMS whose kernels
    take it (the fastest measured runs): the im2col TMA convs' entry binds the input as an
    im2col map, the filter as a tiled map over K x 9C, and takes tensor maps; their persistent
    form has no dependency."""
    from tilesync.api import parse
    from tilesync.dialects import graph, sync
    from tilesync.frontend.torch.compiler import CONV_FORMS, plan, stage_forms

    _, (piece,) = _pieces(ConvChain(k1=128).half(),
                          [torch.randn(2, 64, 16, 16, dtype=torch.half)])
    module = graph_function(piece, names=False)
    assert stage_forms(plan(module), module) == (STAGES_PASS, *CONV_FORMS["tma_ws"])
    tile_sync, persistent = CONV_FORMS["tma_ws"]
    entry = compile_entry((str(graph_function(piece, names=False)), tile_sync))
    assert entry["kernels"]["conv1"].user_params == ("tmap",) * 3 + ("ptr",)  # and the bias
    assert ".global.im2col" in entry["ptx_by_module"]["conv2_module"]
    stages = [op for op in parse(entry["host"]).ops if isinstance(op, sync.StageOp)]
    # verified under the front end's limit=8: conv1's tiles on its grid's boundary, and conv2,
    # checked against those, no more than "boundary" either
    assert {op.sym_name.data: op.attributes[VERIFIED_ATTR].data for op in stages} == \
        {"conv1": "boundary", "conv2": "boundary"}
    binds = {op.sym_name.data: list(op.attributes[graph.BIND_ATTR].data) for op in stages}
    x, w1 = binds["conv1"][:2]
    assert x.map_type.is_im2col and x.map_tensor_shape((2, 16, 16, 64)) == (2, 16, 16, 64)
    assert w1.map_tensor_shape((128, 3, 3, 64)) == (128, 576)  # K x 9C, not 9K x C
    assert binds["conv1"][2].map_tensor_shape((2, 16, 16, 128)) == (512, 128)  # rows x K
    entry = compile_entry((str(graph_function(piece, names=False)), persistent))
    assert "sync.dependency" not in entry["host"] and "pdl" not in entry["host"]
    assert "tilesync_next_epoch" not in entry["kernels"]  # no semaphores: stream order
    # 96 input channels: not the TMA convs' 64-channel k-tiles; the cp.async ones take it
    _, (narrow,) = _pieces(ConvChain(c=96).half(), [torch.randn(2, 96, 16, 16,
                                                                dtype=torch.half)])
    module = graph_function(narrow, names=False)
    assert stage_forms(plan(module), module) == (STAGES_PASS,)


def test_conv_chain_runs_through_the_custom_op_or_stays_with_a_reason(tmp_path):
    model = ConvChain().half()
    x = torch.randn(2, 64, 16, 16, dtype=torch.half)
    forced = tt.compile(model, [x], mode="tilesync", cache_dir=tmp_path)
    assert "torch.ops.tilesync.piece.default" in forced.graph_module.code
    torch.testing.assert_close(forced(x), model(x))  # no GPU: the op computes with torch
    strided = tt.compile(ConvChain(stride=2).half(), [x], cache_dir=tmp_path).report.pieces[0]
    assert strided.choice == "torch" and strided.reason == "graph-to-stages: the conv kernel " \
        "computes 3x3 filters at stride 1, padding 1, not 3x3 at stride [2, 2], padding [1, 1]"
    bf16 = tt.compile(model.to(torch.bfloat16), [x.to(torch.bfloat16)],
                      cache_dir=tmp_path).report.pieces[0]
    assert bf16.reason == "graph-to-stages: the conv kernel takes f16, not bf16"
    with pytest.raises(UnsupportedError, match=r"piece 0 \(Conv→ReLU→Conv .*\): graph-to-"
                                               r"stages: 28x28 images: output tiles of 64 or "
                                               r"128 pixels straddle images"):
        tt.compile(ConvChain().half(), [torch.randn(1, 64, 28, 28, dtype=torch.half)],
                   strict=True, cache_dir=tmp_path)


def test_batch_norm_folds_in_eval_mode_only():
    from tilesync.examples.torch_models import BasicBlock

    block = BasicBlock(64).eval()
    x = torch.randn(1, 64, 8, 8)
    gm, (piece,) = _pieces(block, [x])
    # matched on the folded graph: BN's shift as the conv's bias
    assert "self.bn1" not in gm.code and piece.inputs[2].name == "tilesync_folded_0_bias"
    assert isinstance(block.bn1, torch.nn.BatchNorm2d)  # the user's module is untouched
    with torch.no_grad():
        torch.testing.assert_close(gm(x), block(x), rtol=1e-4, atol=1e-4)
    assert _pieces(BasicBlock(64).train(), [x])[1] == []


class ConvBatchNormChain(torch.nn.Module):
    """conv → BN → ReLU → conv → BN (ResNet's basic block without its residual)."""

    def __init__(self, bias: bool, affine: bool, channels: int = 32):
        super().__init__()
        self.c1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
        self.c2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
        self.b1 = torch.nn.BatchNorm2d(channels, affine=affine)
        self.b2 = torch.nn.BatchNorm2d(channels, affine=affine)

    def forward(self, x):
        return self.b2(self.c2(F.relu(self.b1(self.c1(x)))))


@pytest.mark.parametrize(("bias", "affine"), [(False, True), (True, True), (True, False)])
def test_dynamo_graphs_fold_functional_batch_norms_into_the_convs(bias, affine, tmp_path):
    """Dynamo's graph of conv → BN → ReLU → conv → BN holds F.batch_norm calls over
    placeholders: folded (fold_functional_batch_norms), it is a conv chain, and the graph
    computes what the model does (conv biases or not, BN weights or not)."""
    from tilesync.frontend.torch.compiler import Options, transform

    model = ConvBatchNormChain(bias, affine, channels=64).half().eval()  # a chain ours takes
    with torch.no_grad():  # statistics that are not the identity, so the fold shows
        for bn in (model.b1, model.b2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            if affine:
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-1, 1)
    captured = []

    def capture(gm, inputs):
        captured.append((gm, list(inputs)))
        return gm.forward

    x = torch.randn(1, 64, 8, 8, dtype=torch.half)
    torch._dynamo.reset()
    torch.compile(model, backend=capture)(x)
    (gm, inputs), = captured
    assert "batch_norm" in gm.code
    folded, report = transform(gm, inputs, Options.make(mode="tilesync", cache_dir=tmp_path))
    assert "batch_norm" not in folded.code and "batch_norm" in gm.code
    assert [(p.description.split(" [")[0], p.choice) for p in report.pieces] == \
        [("Conv→ReLU→Conv", "tilesync")]
    with torch.no_grad():  # no GPU: the piece computes the convs and norms as torch does
        assert torch.equal(folded(*inputs)[0], model(x))
    # the piece stays with torch: the graph runs the norms themselves
    kept, report = transform(gm, inputs, Options.make(mode="torch", cache_dir=tmp_path))
    assert kept.code.count("functional.batch_norm(") == 2 and report.pieces[0].choice == "torch"
    with torch.no_grad():
        assert torch.equal(kept(*inputs)[0], model(x))


class ConvBatchNormHead(ConvBatchNormChain):
    """The chain with a linear head after it, a parameter that no piece reads."""

    def __init__(self):
        super().__init__(bias=True, affine=True, channels=64)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.head(super().forward(x).mean((2, 3)))


def _random_statistics(model):
    with torch.no_grad():
        for bn in (model.b1, model.b2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
    return model


def _compiled_both_ways(model, x, tmp_path, mode):
    torch._dynamo.reset()
    aot = tt.compile(model, [x], mode=mode, cache_dir=tmp_path)
    dynamo = torch.compile(model, backend="tilesync",
                           options={"mode": mode, "cache_dir": str(tmp_path)})
    return {"tt.compile": aot, "torch.compile": dynamo}


@pytest.mark.parametrize("change", ["head.weight", "b1.running_mean", "c1.weight", "train"])
@pytest.mark.parametrize("mode", ["auto", "tilesync"])
def test_batch_norms_are_the_models_own_after_compiling(change, mode, tmp_path):
    """An eval-mode conv → BN chain: where the piece stays with torch (auto mode on the
    CPU) the graph runs the model's own convs and norms, not a folded copy, so its results
    equal eager's; where it is ours (forced) the piece folds the norms as they are at its
    call. Either way a later in-place change of a parameter or statistic, or model.train(),
    reaches the compiled model."""
    model = _random_statistics(ConvBatchNormHead().half().eval())
    x = torch.randn(2, 64, 8, 8, dtype=torch.half)
    compiled = _compiled_both_ways(model, x, tmp_path, mode)
    assert [p.choice for p in compiled["tt.compile"].report.pieces] == \
        ["torch" if mode == "auto" else "tilesync"]
    with torch.no_grad():
        for name, fn in compiled.items():
            assert torch.equal(fn(x), model(x)), name
        if change == "train":
            model.train()
        else:
            dict([*model.named_parameters(), *model.named_buffers()])[change].add_(0.5)
        for name, fn in compiled.items():
            assert torch.equal(fn(x), model(x)), name


def test_a_folded_conv_runner_folds_again_where_a_tensor_changes():
    """ops.FoldedBatchNorms hands its runner the folded weight and bias, made once while the
    conv's and the norm's tensors stay as they are and again after an in-place change."""
    from tilesync.frontend.torch.ops import FoldedBatchNorms

    conv, bn = torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    seen = []

    class Conv:  # the compiled piece: a conv of the folded weight and bias
        out_shapes, dtype = [(1, 8, 6, 6)], torch.float32

        def __call__(self, inputs):
            seen.append(inputs[1])
            return [F.conv2d(inputs[0], inputs[1], inputs[2], 1, 1)]

    sources = [conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.weight, bn.bias]
    indices = tuple(range(1, 7))
    runner = FoldedBatchNorms(Conv(), [0, ("weight", indices, bn.eps),
                                       ("bias", indices, bn.eps)])
    x = torch.randn(1, 8, 6, 6)
    with torch.no_grad():
        for _ in range(2):
            (out,) = runner([x, *sources])
            torch.testing.assert_close(out, bn(conv(x)), atol=1e-5, rtol=1e-5)
        assert seen[0] is seen[1]  # unchanged: folded once
        bn.running_var.mul_(2)
        (out,) = runner([x, *sources])
        torch.testing.assert_close(out, bn(conv(x)), atol=1e-5, rtol=1e-5)
        assert seen[2] is not seen[1]
