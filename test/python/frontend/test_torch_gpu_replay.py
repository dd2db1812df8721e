"""A graph's form replayed from a CUDA graph (frontend/torch/replay.py) on the GPU: each call
reads its own inputs and returns outputs of its own (in place and handed over where it can,
never overwriting an output someone holds), a parameter stays in place, a call it cannot
replay runs the function itself, and graphs that write to or return their inputs are not
captured."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tilesync.frontend.torch.replay import (  # noqa: E402
    ADDRESS_CAPTURES,
    GraphReplay,
    NotReplayable,
)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _torch_cuda():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")


class Counted:
    """relu(x @ w) * scale, counting the calls that reach Python (a replay does not)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x, w, scale):
        self.calls += 1
        return (torch.relu(x @ w) * scale,)


def _inputs():
    w = torch.nn.Parameter(torch.randn(64, 32, device="cuda"), requires_grad=False)
    return [torch.randn(16, 64, device="cuda"), w, 2.0]


def test_each_call_reads_its_inputs_and_keeps_its_outputs():
    fn = Counted()
    x, w, scale = _inputs()
    replay = GraphReplay(fn, [x, w, scale])
    outs = []
    with torch.no_grad():
        for _ in range(ADDRESS_CAPTURES + 3):  # every output kept: no capture is free again
            x = torch.randn(16, 64, device="cuda")
            outs.append((replay(x, w, scale)[0], x))
        calls = fn.calls
        for _ in range(3):  # all in-place captures held: copied in, replayed, cloned out
            outs.append((replay(torch.randn(16, 64, device="cuda"), w, scale)[0], None))
    assert fn.calls == calls  # replayed: no Python call of fn
    assert sum(map(len, replay.in_place.values())) == ADDRESS_CAPTURES
    for out, source in outs[:ADDRESS_CAPTURES + 3]:  # no later call overwrote an output
        torch.testing.assert_close(out, torch.relu(source @ w) * scale)
    assert replay.static[1] is w  # the parameter is read in place, not copied


def test_inputs_in_place_and_outputs_handed_over_while_no_one_holds_them():
    fn = Counted()
    x, w, scale = _inputs()
    replay = GraphReplay(fn, [x, w, scale])
    with torch.no_grad():
        replay(x, w, scale)  # the capture on x's own address
        calls = fn.calls
        y = None
        for _ in range(5):  # y = model(x): the last y is held through the next call
            x.copy_(torch.randn_like(x))  # new values at the same address are read
            held = None if y is None else y.data_ptr()
            y = replay(x, w, scale)[0]
            torch.testing.assert_close(y, torch.relu(x @ w) * scale)
            assert y.data_ptr() != held  # the held output was not overwritten
        for _ in range(3):  # nothing held: the same buffers again
            first = replay(x, w, scale)[0].data_ptr()
            assert replay(x, w, scale)[0].data_ptr() == first
    # x's address, double-buffered: the second capture (a warm-up call and the captured one)
    assert [len(c) for c in replay.in_place.values()] == [2] and fn.calls == calls + 2
    y_view = y[:2]  # a view holds the buffer as well
    del y
    with torch.no_grad():
        assert replay(x, w, scale)[0].data_ptr() != y_view.data_ptr()


def test_calls_it_cannot_replay_run_the_function():
    fn = Counted()
    x, w, scale = _inputs()
    replay = GraphReplay(fn, [x, w, scale])
    other_w = torch.randn(64, 32, device="cuda")
    cases = [(torch.randn(8, 64, device="cuda"), w, scale),  # another shape
             (x, other_w, scale),  # another parameter tensor
             (x, w, 3.0),  # another constant
             (x.half(), w, scale)]  # another dtype: fn raises, as it would unreplayed
    with torch.no_grad():
        for args in cases[:3]:
            before = fn.calls
            torch.testing.assert_close(replay(*args)[0], torch.relu(args[0] @ args[1]) * args[2])
            assert fn.calls == before + 1
        with pytest.raises(RuntimeError):
            replay(*cases[3])
    x.requires_grad_(True)  # autograd records: fn itself, with its graph
    before = fn.calls
    assert replay(x, w, scale)[0].requires_grad and fn.calls == before + 1


def test_inside_another_capture_the_function_is_captured():
    from tilesync.frontend.torch.cost import capture_graph

    fn = Counted()
    x, w, scale = _inputs()
    replay = GraphReplay(fn, [x, w, scale])
    with torch.no_grad():
        graph, out = capture_graph(lambda: replay(x, w, scale))
        x.copy_(torch.randn_like(x))
        graph.replay()
    torch.testing.assert_close(out[0], torch.relu(x @ w) * scale)


def test_graphs_that_write_to_or_return_an_input_are_not_captured():
    x, w, _ = _inputs()
    with torch.no_grad(), pytest.raises(NotReplayable, match="writes to its inputs"):
        GraphReplay(lambda a, b: (a.add_(1) @ b,), [x, w])
    with torch.no_grad(), pytest.raises(NotReplayable, match="a view of an input"):
        GraphReplay(lambda a, b: (a[:4], a @ b), [x, w])
    with pytest.raises(NotReplayable, match="off the GPU"):
        GraphReplay(lambda a: a, [x.cpu()])
    with pytest.raises(NotReplayable, match="autograd"):
        GraphReplay(lambda a: a * 2, [x.clone().requires_grad_(True)])


def test_a_module_whose_parameters_require_grad_runs_itself_under_autograd():
    """A GraphModule reads its parameters as attributes: with grad on and a parameter that
    requires it, a call runs the module (its output has a history, backward reaches the
    weight); under no_grad, or once the parameter is frozen, it replays."""
    module = torch.nn.Linear(64, 32).cuda()
    x = torch.randn(16, 64, device="cuda")
    with torch.no_grad():
        replay = GraphReplay(module, [x])
    out = replay(x)
    assert out.requires_grad
    out.sum().backward()
    assert module.weight.grad is not None
    with torch.no_grad():
        assert not replay(x).requires_grad
        torch.testing.assert_close(replay(x), module(x))
    module.requires_grad_(False)
    assert not replay(x).requires_grad
