"""replay.py's bookkeeping on the CPU (the captures themselves need a GPU,
test_torch_gpu_replay.py): a capture's outputs count as free only while nothing outside holds
their storage, and are handed over as aliases or as clones."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tilesync.frontend.torch import replay  # noqa: E402


def _capture(outputs):
    capture = replay._Capture.__new__(replay._Capture)  # the outputs of a capture, without one
    capture.outputs = outputs
    capture.leaves = [o for o in torch.utils._pytree.tree_leaves(outputs)
                      if isinstance(o, torch.Tensor)]
    capture.own = [replay._holders(o) for o in capture.leaves]
    return capture


def test_outputs_are_free_until_someone_holds_them():
    if replay._holders(torch.zeros(1)) is None:
        pytest.skip("this torch does not count storage holders")
    a, b = torch.zeros(4), torch.ones(2)
    capture = _capture((a, b))
    assert capture.free()
    handed = capture.results(hand_over=True)
    assert handed[0].data_ptr() == a.data_ptr() and not capture.free()
    del handed
    assert capture.free()
    view = capture.results(hand_over=True)[1][1:]  # a view of a handed-over output holds it
    assert not capture.free()
    del view
    assert capture.free()
    cloned = capture.results(hand_over=False)  # clones hold nothing of the capture's
    assert cloned[0].data_ptr() != a.data_ptr() and capture.free()


def test_results_keep_the_outputs_structure():
    a = torch.arange(3.0)
    assert isinstance(_capture(a).results(hand_over=True), torch.Tensor)
    nested = _capture({"x": [a], "n": 3}).results(hand_over=False)
    assert nested["n"] == 3 and torch.equal(nested["x"][0], a)
    assert nested["x"][0].data_ptr() != a.data_ptr()


def test_autograd_records_where_an_argument_or_a_parameter_requires_grad():
    weight = torch.nn.Parameter(torch.ones(2))
    graph_replay = replay.GraphReplay.__new__(replay.GraphReplay)  # the rule, without a capture
    graph_replay.parameters = [weight]
    assert graph_replay.records_autograd((torch.zeros(2),))
    with torch.no_grad():
        assert not graph_replay.records_autograd((torch.zeros(2),))
    weight.requires_grad_(False)
    assert not graph_replay.records_autograd((torch.zeros(2), 3.0))
    assert graph_replay.records_autograd((torch.zeros(2, requires_grad=True),))
