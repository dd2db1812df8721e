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


def test_boxed_functions_get_their_inputs_as_one_fresh_list():
    seen = []

    def boxed(args):
        seen.append(list(args))
        args.clear()  # Inductor's boxed functions may free their inputs
        return "boxed"

    boxed._boxed_call = True
    inputs = ["x", "w"]
    chosen, _ = faster_of({"inductor": boxed}, inputs, timer=lambda call: (call(), call())[0]
                          and 1.0)
    assert chosen == "inductor" and seen == [["x", "w"], ["x", "w"]] and inputs == ["x", "w"]
