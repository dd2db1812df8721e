"""A dry run of the attention, conv-chain and Conv1D MLP pieces without a GPU: the compiled
entry as
StageRunner loads it (ops.load_program), checked against what the launches will need: the
host plan on one stream (StageProgram.run_on takes no other), one #graph.bind per user
parameter of each stage's kernel (a Conv1D weight's the transposed one the runner derives),
the PTX that nvJitLink compiles for sm_90a with the parameters the signatures say, and dynamic
shared memory the device can give."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tilesync.analysis.stage_graph import Launch, StageGraph  # noqa: E402
from tilesync.api import parse  # noqa: E402
from tilesync.contract import NEXT_EPOCH_KERNEL, PARAM_KINDS, SM_90  # noqa: E402
from tilesync.dialects import graph, sync  # noqa: E402
from tilesync.examples.torch_models import HFGPT2MLP, BasicBlock, OneHeadAttention  # noqa: E402
from tilesync.frontend.torch.compiler import (  # noqa: E402
    STAGES_PASS,
    compile_entry,
    fold_batch_norms,
    record_values,
)
from tilesync.frontend.torch.patterns import find_pieces, graph_function  # noqa: E402
from tilesync.runtime.module import compile_ptx, ptx_entry_params  # noqa: E402


def _entry(model, x):
    gm = fold_batch_norms(torch.fx.symbolic_trace(model.eval()))
    record_values(gm, [x])
    (piece,) = find_pieces(gm)
    return compile_entry((str(graph_function(piece, names=False)), STAGES_PASS))


def _compiles_with_its_parameters(entry):
    """nvJitLink compiles every module's PTX for sm_90a, and each kernel's `.param`s are the
    sizes its signature's kinds say."""
    _nvjitlink()
    for module, ptx in entry["ptx_by_module"].items():
        assert compile_ptx(ptx, "sm_90a", module).cubin.startswith(b"\x7fELF")
        params = ptx_entry_params(ptx)
        for sig in entry["kernels"].values():
            if sig.module == module:
                assert params[sig.name] == [PARAM_KINDS[p].size for p in sig.params], sig.name


def _nvjitlink():
    try:
        from cuda.bindings import nvjitlink

        nvjitlink.version()
    except Exception as exc:
        pytest.skip(f"nvJitLink unavailable: {exc}")


@pytest.mark.parametrize(("name", "stages"), [
    ("attention", ["qkv", "scores", "softmax", "context", "out"]),
    ("resnet_block", ["conv1", "conv2"]),
])
def test_compiled_piece_fits_its_launches(name, stages):
    if name == "attention":
        entry = _entry(OneHeadAttention(64).half(), torch.randn(192, 64, dtype=torch.half))
    else:  # the BatchNorms folded into biases: conv1 binds x, w1, the temp and b1
        entry = _entry(BasicBlock(64).half(), torch.randn(2, 64, 16, 16, dtype=torch.half))
    host = parse(entry["host"])
    plan = StageGraph.of(host).plan
    assert [step.stage for step in plan if isinstance(step, Launch)] == stages
    assert {step.stream for step in plan} == {0}  # run_on: torch's one stream, PDL between
    assert all(step.pdl for step in plan[1:])
    kernels = entry["kernels"]
    for op in host.ops:
        if isinstance(op, sync.StageOp):
            sig = kernels[op.kernel.nested_references.data[-1].data]
            binds = op.attributes[graph.BIND_ATTR].data
            assert len(binds) == len(sig.user_params) and set(sig.params) == {"ptr"}
            assert sig.dynamic_shared_bytes <= SM_90.max_shared_per_block
    assert NEXT_EPOCH_KERNEL in kernels  # a graph replay bumps the epoch on the device
    _compiles_with_its_parameters(entry)


@pytest.mark.parametrize(("rows", "weight_param"), [
    (32, "ptr"),  # the wgmma GEMMs read the transposed weight's address
    (64, "tmap"),  # the TMA GEMMs a map the runner encodes over the transposed weight
])
def test_compiled_conv1d_mlp_binds_its_weights_transposed(rows, weight_param):
    """Hugging Face's GPT-2 MLP (Conv1D: K x N weights): each GEMM's B operand is bound as
    #graph.bind<transposed i> of the weight's argument, a kernel parameter of the N x K
    weight an nn.Linear would give, and the PTX compiles."""
    entry = _entry(HFGPT2MLP(512, 128).half(), torch.randn(rows, 128, dtype=torch.half))
    host = parse(entry["host"])
    plan = StageGraph.of(host).plan
    assert [step.stage for step in plan if isinstance(step, Launch)] == ["gemm1", "gemm2"]
    assert {step.stream for step in plan} == {0}
    kernels = entry["kernels"]
    weights = {}
    for op in host.ops:
        if isinstance(op, sync.StageOp):
            sig = kernels[op.kernel.nested_references.data[-1].data]
            binds = op.attributes[graph.BIND_ATTR].data
            assert len(binds) == len(sig.user_params)
            assert sig.dynamic_shared_bytes <= SM_90.max_shared_per_block
            weights[op.sym_name.data] = (binds[1].kind.data, binds[1].values,
                                         sig.user_params[1])
    # x, w1 (128 x 512), b1, w2 (512 x 128), b2: each weight read as its transpose
    assert weights == {"gemm1": ("transposed", (1,), weight_param),
                       "gemm2": ("transposed", (3,), weight_param)}
    assert entry["temps"] == [(rows, 512)]
    _compiles_with_its_parameters(entry)
