"""The tickets a stage kernel takes in one launch, counted over its workers
(analysis.queue_tickets)."""

import pytest
from xdsl.dialects import gpu

from tilesync.analysis.kernel_eval import Unproven
from tilesync.analysis.queue_tickets import tickets_per_launch
from tilesync.api import parse

_QUEUE = "!dataflow.queue<2 x memref<64xf32>>"


def _kernel(body: str, block: int = 128, extra: str = "") -> gpu.FuncOp:
    module = parse(f"""
builtin.module {{
  gpu.module @k {{
    gpu.func @f(%q: {_QUEUE}{extra}) kernel
        attributes {{gpu.known_block_size = array<i32: {block}, 1, 1>}} {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c8 = arith.constant 8 : index
      %c1024 = arith.constant 1024 : index
{body}
      gpu.return
    }}
  }}
}}""")
    return next(op for op in module.walk() if isinstance(op, gpu.FuncOp))


def _count(kernel: gpu.FuncOp, ctas: int, workers: int = 1, threads: int | None = None) -> int:
    counts = tickets_per_launch(kernel, ctas, workers, threads)
    assert set(counts.acquired) <= {kernel.body.block.args[0]}
    return counts.acquired.get(kernel.body.block.args[0], 0)


_TAKE = f"""
        %t = dataflow.acquire_full %q{{threads}} : {_QUEUE}
        dataflow.release_empty %q, %t{{threads}} : {_QUEUE}"""


def _take(threads: int | None = None) -> str:
    return _TAKE.format(threads=f" threads {threads}" if threads else "")


def test_one_ticket_a_cta_without_a_loop():
    assert _count(_kernel(_take()), ctas=132) == 132


def test_a_grid_stride_loop_takes_each_tile_once():
    kernel = _kernel(f"""
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %c1024 step %ctas {{{_take()}
      }}""")
    assert _count(kernel, ctas=132) == 1024
    assert _count(kernel, ctas=1) == 1024
    assert _count(kernel, ctas=2000) == 1024  # CTAs past the last tile take none


def test_a_share_of_workers_in_groups_of_threads():
    """Two workers a CTA (threads 128 of 256), each ceil((T - w) / W) tiles: T in all."""
    kernel = _kernel(f"""
      %tid = gpu.thread_id x
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      %c2 = arith.constant 2 : index
      %c128 = arith.constant 128 : index
      %group = arith.divui %tid, %c128 : index
      %base = arith.muli %cta, %c2 : index
      %w = arith.addi %base, %group : index
      %workers = arith.muli %ctas, %c2 : index
      %c1023 = arith.constant 1023 : index
      %spread = arith.addi %workers, %c1023 : index
      %left = arith.subi %spread, %w : index
      %mine = arith.divui %left, %workers : index
      scf.for %i = %c0 to %mine step %c1 {{{_take(128)}
      }}""", block=256)
    assert _count(kernel, ctas=132, workers=2, threads=128) == 1024
    assert _count(kernel, ctas=7, workers=2, threads=128) == 1024


def test_a_tile_taken_on_either_side_of_a_branch_counts_once():
    both = _kernel(f"""
      %t = scf.if %wide -> (index) {{
        %a = dataflow.acquire_full %q : {_QUEUE}
        scf.yield %a : index
      }} else {{
        %b = dataflow.acquire_full %q : {_QUEUE}
        scf.yield %b : index
      }}
      dataflow.release_empty %q, %t : {_QUEUE}""", extra=", %wide: i1")
    assert _count(both, ctas=4) == 4
    one = _kernel(f"""
      scf.if %wide {{{_take()}
      }}""", extra=", %wide: i1")
    with pytest.raises(Unproven, match="sides that take different numbers of tickets"):
        _count(one, ctas=4)


def test_tickets_that_depend_on_the_iteration_are_counted_by_unrolling():
    """The first three of eight iterations take a ticket, and a peeled first tile."""
    kernel = _kernel(f"""
      scf.for %i = %c0 to %c8 step %c1 {{
        %early = arith.cmpi ult, %i, %c3 : index
        scf.if %early {{{_take()}
        }}
      }}
      %t0 = dataflow.acquire_full %q : {_QUEUE}
      dataflow.release_empty %q, %t0 : {_QUEUE}""")
    assert _count(kernel, ctas=2) == 2 * 4


def test_a_count_a_kernel_argument_or_a_thread_decides_is_unproven():
    argument = _kernel(f"""
      scf.for %i = %c0 to %n step %c1 {{{_take()}
      }}""", extra=", %n: index")
    with pytest.raises(Unproven, match="may or may not run") as err:
        _count(argument, ctas=2)
    assert err.value.op.name == "dataflow.acquire_full"
    per_thread = _kernel(f"""
      %tid = gpu.thread_id x
      scf.for %i = %tid to %c1024 step %c8 {{{_take()}
      }}""")
    with pytest.raises(Unproven, match="may or may not run"):
        _count(per_thread, ctas=2)


def _drawing_ahead(bound: str) -> gpu.FuncOp:
    """A worker that draws each next ticket while it works on the current one, n = `bound`
    iterations, its draws guarded unsigned (`0 <u n`, `i + 1 <u n`)."""
    return _kernel(f"""
      %n = {bound}
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {{
        %drawn = dataflow.draw_full %q : {_QUEUE}
        scf.yield %drawn : index
      }} else {{
        scf.yield %c0 : index
      }}
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {{
        %t = dataflow.acquire_full %q at %d : {_QUEUE}
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {{
          %drawn = dataflow.draw_full %q : {_QUEUE}
          scf.yield %drawn : index
        }} else {{
          scf.yield %d : index
        }}
        dataflow.release_empty %q, %t : {_QUEUE}
        scf.yield %next : index
      }}""")


def test_draws_ahead_are_counted_with_the_acquires_that_take_them():
    kernel = _drawing_ahead("arith.constant 8 : index")
    queue = kernel.body.block.args[0]
    counts = tickets_per_launch(kernel, 2, 1, None)
    assert (counts.acquired[queue], counts.drawn[queue], counts.drawn_acquired[queue]) == \
        (16, 16, 16)
    # n = -1: the loop (signed) does not run, but 0 <u n holds, so the first draw does
    kernel = _drawing_ahead("arith.subi %c0, %c1 : index")
    queue = kernel.body.block.args[0]
    counts = tickets_per_launch(kernel, 2, 1, None)
    assert counts.acquired.get(queue, 0) == 0 and counts.drawn[queue] == 2
    assert counts.drawn_acquired.get(queue, 0) == 0


def test_workers_that_start_apart_but_loop_alike_are_counted_together(monkeypatch):
    """A grid-stride loop starts at each CTA's own index: workers are run apart only where
    their trip counts differ, not one CTA at a time (a million-CTA grid took minutes)."""
    from tilesync.analysis import queue_tickets

    runs: list[int] = []
    original = queue_tickets._TicketCount.run

    def counted(self, state):
        runs.append(len(self.tiles))
        return original(self, state)

    monkeypatch.setattr(queue_tickets._TicketCount, "run", counted)
    kernel = _kernel(f"""
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      %count = arith.constant 30000 : index
      scf.for %i = %cta to %count step %ctas {{{_take()}
      }}""")
    assert _count(kernel, ctas=20000) == 30000
    assert len(runs) <= 20  # chunks of workers, each then split by its two trip counts


def test_more_workers_than_are_counted_one_by_one_is_unproven_at_once():
    """2^31 - 1 CTAs (a legal grid) once built a list of every worker: gigabytes, then a
    MemoryError; above the enumeration limit the count is left to the launch instead."""
    kernel = _kernel(_TAKE.format(threads=""))
    with pytest.raises(Unproven, match="more than the 1000000 workers"):
        tickets_per_launch(kernel, 2**31 - 1, 1, None)
    with pytest.raises(Unproven, match="more than the 1000000 workers"):
        tickets_per_launch(kernel, 500_001, 2, 64)
    assert _count(kernel, 1000) == 1000
