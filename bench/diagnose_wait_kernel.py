"""Forward-progress mechanisms compared on the 2-stage tile chain at 1.2 waves: stream order,
two streams without a guarantee, the wait-kernel (all producer blocks started, or the paper's
first block), with and without stream priorities, and PDL; median time and each stage's span.

python -m tilesync.bench.diagnose_wait_kernel

(It found a host-side bug: the runtime allocated and freed a scratch buffer per launch while
binding flags, and the free synchronized the device, so consumers started only ~45 us after
their producer ended. Fixed in runtime/program.py; the wait-kernel now costs ~3 us over PDL.)
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, i64

import tilesync
from tilesync.api import default_pipeline
from tilesync.bench.stages import chain_module, stream_sync_plan
from tilesync.contract import WAIT_TARGET
from tilesync.dialects import sync


def timed(program, args, reps=20, warmup=3):
    from tilesync.runtime.stream import elapsed_ms

    pairs = []
    for i in range(warmup + reps):
        end = program.run(args)
        if i >= warmup:
            pairs.append((program.last_start, end))
    program.synchronize()
    return float(np.median([elapsed_ms(s, e) for s, e in pairs]))


def main() -> None:
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.program import StageProgram

    rows = 40
    base = ["sync-generate-policies", "sync-select-policy{policy=tile}", "sync-insert-post-wait"]
    variants = {}

    def build(name, passes, edit=None, first_block_target=False):
        module = chain_module(2, rows, "tile")
        if edit:
            edit(module)
        compiled = tilesync.compile(module, pipeline=default_pipeline(before=tuple(passes)))
        program = StageProgram(compiled)
        if first_block_target:
            program._bind_orig = program._bind

            def bind(role, stage, _p=program):
                if role == WAIT_TARGET:
                    return _p.epoch * 1
                return _p._bind_orig(role, stage)
            program._bind = bind
        variants[name] = program

    def same_priority(module):
        for op in module.walk():
            if isinstance(op, sync.LaunchOp):
                op.priority = IntegerAttr(0, i64)

    build("stream", base, stream_sync_plan)
    build("two streams, no wait-kernel", base)
    build("two streams, no wait-kernel, same priority", base, same_priority)
    build("wait-kernel (all blocks started)", [*base, "sync-insert-wait-kernel"])
    build("wait-kernel (first block started)", [*base, "sync-insert-wait-kernel"],
          first_block_target=True)
    build("wait-kernel, same priority", [*base, "sync-insert-wait-kernel"], same_priority)
    build("pdl", [*base, "sync-use-pdl"])
    from tilesync.bench.stages import timeline

    n = rows * 8 * 1024
    a = DeviceBuffer.from_numpy(np.ones(n, np.float32))
    b, c = DeviceBuffer.empty(n, np.float32), DeviceBuffer.empty(n, np.float32)
    traces = [DeviceBuffer.zeros(2 * rows * 8, np.int64) for _ in range(2)]
    args = {"s1": [a, b, 100, 50_000, traces[0]], "s2": [b, c, 100, 50_000, traces[1]]}
    for name, program in variants.items():
        ms = timed(program, args)
        spans = timeline([t.to_numpy() for t in traces])
        cells = "  ".join(f"[{s['first_start']:.0f} {s['last_start']:.0f} {s['last_end']:.0f}]"
                          for s in spans)
        print(f"{name:<45} {ms:8.4f} ms   stage spans (us: first start, last start, end) "
              f"{cells}")


if __name__ == "__main__":
    from tilesync.runtime.device import gpu_available

    available, reason = gpu_available()
    if not available:
        raise SystemExit(f"python -m tilesync.bench.diagnose_wait_kernel: error: {reason}")
    main()
