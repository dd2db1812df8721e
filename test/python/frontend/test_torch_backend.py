"""frontend/torch/backend.py without a GPU: how the backend picks the faster way to run a
graph (the timer is a stand-in; on a GPU it is median_call_ms)."""

from __future__ import annotations

from tilesync.frontend.torch.backend import faster_of


def _timer(times: dict[str, float]):
    def timer(call) -> float:
        return times[call()]

    return timer


def test_the_faster_candidate_is_chosen_and_every_time_reported():
    candidates = {"inductor": lambda *a: "inductor", "eager": lambda *a: "eager"}
    chosen, times = faster_of(candidates, [1, 2], timer=_timer({"inductor": 0.2, "eager": 0.1}))
    assert chosen == "eager" and times == {"inductor": 0.2, "eager": 0.1}
    chosen, _ = faster_of(candidates, [1, 2], timer=_timer({"inductor": 0.1, "eager": 0.3}))
    assert chosen == "inductor"


def test_a_candidate_that_cannot_run_is_not_chosen(capsys):
    def broken(*args):
        raise RuntimeError("no kernel for this device")

    candidates = {"inductor": broken, "eager": lambda *a: "eager"}
    chosen, times = faster_of(candidates, [], timer=_timer({"eager": 5.0}))
    assert chosen == "eager" and set(times) == {"eager"}
    assert "inductor could not run the graph: RuntimeError" in capsys.readouterr().err


def test_compiled_graphs_are_called_as_dynamo_calls_them():
    """With the inputs as arguments, also where Inductor marks its function `_boxed_call`
    (Dynamo calls a backend's result that way; a list made inductor raise IndexError)."""
    seen = []

    def compiled(*args):
        seen.append(args)
        return "inductor"

    compiled._boxed_call = True
    chosen, _ = faster_of({"inductor": compiled}, ["x", "w"], timer=lambda call: call() and 1.0)
    assert chosen == "inductor" and seen == [("x", "w")]
