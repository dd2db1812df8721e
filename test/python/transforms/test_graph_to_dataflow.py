"""transforms/graph/graph_to_dataflow.py: NeRF's MLP written at the graph level becomes the very
pipeline the dataflow-mlp bench runs (and the GPU tests check), bindings and all."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tilesync.api import parse
from tilesync.bench import dataflow_mlp
from tilesync.dialects import dataflow, graph
from tilesync.kernels.mlp_pipeline import mlp_pipeline_module
from tilesync.transforms.graph.graph_to_dataflow import GraphToDataflowPass

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
