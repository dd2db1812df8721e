"""transforms/graph/graph_to_dataflow.py: NeRF's MLP written at the graph level becomes the very
pipeline the dataflow-mlp bench runs (and the GPU tests check), bindings and all."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tilesync.api import parse
from tilesync.bench import dataflow_mlp
from tilesync.dialects import dataflow, graph
from tilesync.kernels.mlp_pipeline import MlpStack, mlp_pipeline_module
from tilesync.transforms.graph.graph_to_dataflow import (
    GraphToDataflowPass,
    allotted_ctas,
    modelled_layer_ms,
    stage_ms,
)

ROWS = 1 << 16


def _nerf_function(rows: int) -> str:
    """NeRF's MLP as a graph function (the bench's widths: padded encodings, 16 colours):
    arguments x, v, then each layer's weight and bias, the density's after the trunk's."""
    t = lambda *shape: "tensor<" + "x".join(map(str, shape)) + "xf16>"  # noqa: E731
    trunk, heads = dataflow_mlp.NERF_TRUNK, dataflow_mlp.NERF_HEADS
    args = [f"%x: {t(rows, 64)}", f"%v: {t(rows, 64)}"]
    lines, h, width = [], "%x", 64
    widths = list(trunk[1:]) + list(heads)
    for layer, n in enumerate(widths):
        k = width + (64 if layer in (5, 9) else 0)
        args += [f"%w{layer}: {t(n, k)}", f"%b{layer}: {t(n)}"]
        src = h
        if layer == 8:  # the density on the trunk's output, beside the feature layer
            args += [f"%ws: {t(1, width)}", f"%bs: {t(1)}"]
            lines.append(f"%s = graph.linear {h}, %ws, %bs : ({t(rows, width)}, {t(1, width)}, "
                         f"{t(1)}) -> {t(rows, 1)}")
        if layer in (5, 9):
            cat = "%x" if layer == 5 else "%v"
            lines.append(f"%c{layer} = graph.concat {cat}, {h} dim -1 : ({t(rows, 64)}, "
                         f"{t(rows, width)}) -> {t(rows, k)}")
            src = f"%c{layer}"
        lines.append(f"%l{layer} = graph.linear {src}, %w{layer}, %b{layer} : ({t(rows, k)}, "
                     f"{t(n, k)}, {t(n)}) -> {t(rows, n)}")
        h = f"%l{layer}"
        if layer not in (8, 10):
            lines.append(f"%r{layer} = graph.relu {h} : {t(rows, n)}")
            h = f"%r{layer}"
        width = n
    body = "\n  ".join(lines)
    return (f"func.func @nerf({', '.join(args)}) -> ({t(rows, 16)}, {t(rows, 1)}) {{\n  {body}\n"
            f"  func.return {h}, %s : {t(rows, 16)}, {t(rows, 1)}\n}}")


def test_nerf_at_the_graph_level_becomes_the_benched_pipeline():
    module = parse(_nerf_function(ROWS))
    GraphToDataflowPass(fused=(1, 10)).apply(Context(), module)
    stack = dataflow_mlp.workload_stack("nerf", ROWS)
    expected = mlp_pipeline_module(stack)
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    binds = {stage.sym_name.data: [str(b) for b in stage.attributes.pop(graph.BIND_ATTR)]
             for stage in pipeline.stages}
    # the same kernels and pipeline, op for op, once the bindings are set aside
    got = ModuleOp([op.clone() for op in module.ops])
    assert str(got) == str(expected)
    # the trunk's last stage takes the density's weight, bias and result 1; the fused colour
    # stage the directions (argument 1), its two layers' weights and biases, and result 0
    assert binds["layer8"] == ["#graph.bind<input 18>", "#graph.bind<input 19>",
                               "#graph.bind<input 20>", "#graph.bind<input 21>",
                               "#graph.bind<result 1>"]
    assert binds["layers9_10"] == ["#graph.bind<input 1>"] + \
        [f"#graph.bind<input {i}>" for i in (22, 23, 24, 25)] + ["#graph.bind<result 0>"]
    assert binds["layers0_1"][0] == "#graph.bind<input 0>"
    assert stack.stage_count == len(binds) == 9


# ---- the allotment of a stack's CTAs (measured or modelled layer times) ----


def test_allotment_gives_slower_layers_more_ctas():
    stack = MlpStack(1 << 18, (64, 256, 256, 256))
    ctas = allotted_ctas(stack, [0.05, 0.2, 0.1])
    assert sum(ctas) <= stack.sms
    assert ctas[1] > ctas[2] > ctas[0]
    # balanced: every stage's CTAs in proportion to its time, to within a CTA or two
    assert abs(ctas[1] / ctas[2] - 2) < 0.2


def test_allotment_shares_the_sms_with_the_layer_norms_simt_stage():
    """The stages are one persistent kernel's blocks (one an SM here): the SIMT layer norm's
    CTAs come out of the same 132 as the tensor stages'."""
    stack = dataflow_mlp.workload_stack("meshgraphnets", 1 << 18)
    # its last two layers are one stage: that stage's time is theirs together
    assert stack.stage_layers == [[0], [1, 2]] and stack.stage_count == 3
    assert stage_ms(stack, [0.05, 0.04, 0.04, 0.03]) == [0.05, 0.08, 0.03]
    ctas = allotted_ctas(stack, [0.05, 0.04, 0.04, 0.03])
    assert len(ctas) == 3 and sum(ctas) <= stack.sms
    assert ctas[1] > ctas[0] > ctas[2]


@pytest.mark.parametrize("workload, rows, measured", [
    # bulk-synchronous layer times (ms) on an H100, bench/results/dataflow-mlp at 5573f3f
    ("nerf", 1 << 16, [0.0263, 0.039, 0.0391, 0.0399, 0.0392, 0.0427, 0.0382, 0.0401, 0.0535,
                       0.0341, 0.0112]),
    ("nerf", 1 << 18, [0.0935, 0.1372, 0.1354, 0.137, 0.1361, 0.1484, 0.1352, 0.1366, 0.1876,
                       0.113, 0.0334]),
    ("meshgraphnets", 1 << 18, [0.1084, 0.0591, 0.0589, 0.0582]),  # the last: layer norm
])
def test_modelled_layer_times_allot_as_the_measured_ones(workload, rows, measured):
    from tilesync.bench.dataflow_mlp import workload_stack

    stack = workload_stack(workload, rows)
    from_model = allotted_ctas(stack, modelled_layer_ms(stack))
    from_measured = allotted_ctas(stack, measured)
    assert max(abs(a - b) for a, b in zip(from_model, from_measured, strict=True)) <= 3
