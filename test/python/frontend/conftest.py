"""Shared by the front end's GPU tests: a compiled piece captured in a CUDA graph and replayed."""

from __future__ import annotations

import pytest


@pytest.fixture
def graph_replays():
    """graph_replays(compiled, inputs, sources) -> [the graph's output for each source]: the
    call captured once on static copies of `inputs` (after a warm-up on a side stream, as
    torch asks), then for each source its inputs copied in, the output filled with NaN and the
    graph replayed. Each output is returned cloned, for the caller to check."""
    torch = pytest.importorskip("torch")

    def replay(compiled, inputs, sources):
        from tilesync.frontend.torch.cost import capture_graph

        static = [t.clone() for t in inputs]
        graph, captured = capture_graph(lambda: compiled(*static), ours=False)  # as a user does
        outs = []
        for source in sources:
            for s, t in zip(static, source, strict=True):
                s.copy_(t)
            captured.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            outs.append(captured.clone())
        return outs

    return replay


@pytest.fixture
def fp32_on_cuda(monkeypatch):
    """Skips where torch sees no CUDA device; fp32 references in fp32, not TF32's 10-bit
    mantissa (cuDNN's convs and cuBLAS may default to it)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
