"""On a GPU: an mbarrier wait whose phase never completes (initialized for two arrivals, given
one) traps after its timeout instead of hanging, and the host names it: in a debug build as a
SpinTimeoutError naming the kernel, block, barrier and parity; otherwise as a DeviceFaultError
that says a wait may have timed out. A trap leaves the context unusable: each case runs in a
child process. Skipped without a GPU (conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

TIMEOUT_NS = 100_000_000  # semaphore waits; an mbarrier wait traps after twice this

# initialized for two arrivals, given one, waited on by the whole block
STUCK = (Path(__file__).parent / "Inputs" / "mbarrier_stuck.mlir").read_text()

SCRIPT = textwrap.dedent("""
    import sys, time, tilesync
    from tilesync.contract import DeviceFaultError, SpinTimeoutError
    from tilesync.runtime.program import StageProgram
    text, debug = sys.stdin.read(), sys.argv[1] == "debug"
    program = StageProgram(tilesync.compile(text, target="sm_90a", debug=debug,
                                            timeout_ns=int(sys.argv[2])))
    start = time.perf_counter()
    program.run({"stuck": []})
    try:
        program.synchronize()
    except SpinTimeoutError as err:
        print(f"{time.perf_counter() - start:.3f}|SpinTimeoutError|{err}")
    except DeviceFaultError as err:
        print(f"{time.perf_counter() - start:.3f}|DeviceFaultError|{err}")
    else:
        print("no error")
""")


def _run_stuck(debug: bool, in_flight: bool) -> tuple[float, str, str]:
    """(seconds from the launch to the error, the error's class, its message)."""
    text = STUCK.replace("%parity :", "%parity wgmma_in_flight :") if in_flight else STUCK
    done = subprocess.run([sys.executable, "-c", SCRIPT, "debug" if debug else "plain",
                           str(TIMEOUT_NS)], input=text, capture_output=True, text=True,
                          timeout=120)
    lines = done.stdout.strip().splitlines()
    assert lines and lines[-1].count("|") >= 2, done.stdout + done.stderr
    seconds, kind, message = lines[-1].split("|", 2)
    return float(seconds), kind, message


@pytest.mark.parametrize("in_flight", [False, True], ids=["plain", "wgmma_in_flight"])
def test_debug_build_names_the_mbarrier_wait_within_seconds(in_flight):
    seconds, kind, message = _run_stuck(debug=True, in_flight=in_flight)
    assert kind == "SpinTimeoutError", message
    assert seconds < 3.0, message  # the wait traps after 0.2 s, not never
    assert "stage @stuck kernel stuck, block (" in message
    assert "mbarrier full_bars[0] never completed its phase of parity 0" in message


def test_plain_build_traps_into_a_device_fault_within_seconds():
    seconds, kind, message = _run_stuck(debug=False, in_flight=False)
    assert kind == "DeviceFaultError", message
    assert seconds < 3.0, message
    assert "mbarrier wait that timed out" in message
