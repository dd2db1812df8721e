"""Checks shared by the front end's GPU tests."""

from __future__ import annotations


def relative_error(out, ref) -> float:
    """|out - ref| / |ref| in fp32, after checking the shapes agree and out is finite."""
    assert out.shape == ref.shape and out.isfinite().all()
    return float((out.float() - ref.float()).norm() / ref.float().norm())


def assert_chosen_by_measurement(piece) -> None:
    """An auto-mode piece runs our way only where it measured faster than torch's path, called
    from the host or replayed from a CUDA graph (both measured where both paths capture); else
    it stays with torch for the measurement or the cost model."""
    if piece.choice == "tilesync":
        assert piece.measured is not None and len(piece.measured) in (2, 4)
        assert piece.measured[0] < piece.measured[1] or (
            len(piece.measured) == 4 and piece.measured[2] < piece.measured[3])
    else:
        assert piece.reason in ("measured", "the cost model")


def assert_graph_chosen_by_measurement(report) -> None:
    """In auto mode on a GPU the whole graph runs in the form that measured fastest (one of
    ours only cost.WIN_MARGIN ahead of torch's fastest, or tied with it and that far ahead on
    the device), of all it has, each also replayed
    from a CUDA graph: torch's (eager, Inductor) and, where a piece is ours, ours (the rest
    eager or through Inductor) through the backend; ours as traced and eager through
    tilesync's compile."""
    from tilesync.frontend.torch import graph_choice as gc
    from tilesync.frontend.torch.cost import WIN_MARGIN

    graph = report.graph
    assert graph is not None and not graph.failed, report.text()
    fastest = min(graph.times, key=graph.times.__getitem__)
    torchs = [form for form in graph.times if not gc.is_ours(form)]
    fastest_torch = min(torchs, key=graph.times.__getitem__)
    # ours only by cost.WIN_MARGIN over torch's fastest form: nearer, torch's fastest runs,
    # unless a form of ours that ties with it on the host runs faster on the device
    ahead = graph.times[fastest] < WIN_MARGIN * graph.times[fastest_torch]
    expected = fastest if ahead else fastest_torch
    tied = [form for form in graph.times if gc.is_ours(form)
            and graph.times[form] * WIN_MARGIN <= graph.times[fastest_torch]]
    if not ahead and tied:  # every form captures here: the tie measured on the device
        assert fastest_torch.removesuffix(gc.REPLAYED) in graph.device_times, graph.line()
        expected, _ = gc.device_tie_break(fastest_torch, graph.times, graph.device_times.get)
    else:
        assert not graph.device_times, graph.line()
    assert graph.form == expected, graph.line()
    assert all(ms > 0 for ms in graph.times.values())
    backend = gc.INDUCTOR in graph.times
    forms = {gc.EAGER, gc.INDUCTOR} if backend else {gc.EAGER}
    if report.ours:
        forms |= {gc.OURS_EAGER, gc.OURS_INDUCTOR} if backend else {gc.OURS}
    assert set(graph.times) == forms | {form + gc.REPLAYED for form in forms}
