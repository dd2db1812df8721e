"""A kernel that holds a stream for a while, so that timed repetitions run back to back.

`runtime.timing.time_region(..., hold_ns_per_rep=N, hold=hold_stream)` enqueues it before the
repetitions: the host enqueues them while it runs, and they then run without the host's launch
gaps between them (nvbench's blocking kernel, with a time limit instead of a host flag: it
cannot hang). It is compiled by tilesync itself, which is why it lives above the runtime.
"""

from __future__ import annotations

from typing import Any

# One thread that keeps the stream busy for `ns` nanoseconds (read off %globaltimer).
HOLD_KERNEL = """
builtin.module {
  gpu.module @tilesync_hold {
    gpu.func @hold(%ns: i64) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>} {
      %start = nvvm.read.ptx.sreg.globaltimer : i64
      scf.while () : () -> () {
        %now = nvvm.read.ptx.sreg.globaltimer : i64
        %elapsed = arith.subi %now, %start : i64
        %early = arith.cmpi slt, %elapsed, %ns : i64
        scf.condition(%early)
      } do {
        %nap = arith.constant 1000 : i32
        nvvm.nanosleep %nap : i32
        scf.yield
      }
      gpu.return
    }
  }
}
"""

_hold_kernel: list[Any] = []


def hold_stream(ns: int, stream: Any = None) -> None:
    """Enqueue HOLD_KERNEL: the stream's next work starts `ns` after it starts, so the host can
    enqueue that work meanwhile and it then runs back to back, without the host's launch gaps
    (nvbench's blocking kernel, with a time limit instead of a host flag: it cannot hang)."""
    from tilesync.runtime.launch import launch

    if not _hold_kernel:
        import tilesync
        from tilesync.runtime.device import get_device
        from tilesync.runtime.module import load_ptx

        program = tilesync.compile(HOLD_KERNEL, target=get_device().arch)
        module = load_ptx(program.ptx, "tilesync_hold")
        _hold_kernel.append(module.function("hold", program.kernels["hold"].params))
    launch(_hold_kernel[0], 1, 1, [int(ns)], stream=stream)



__all__ = ["HOLD_KERNEL", "hold_stream"]
