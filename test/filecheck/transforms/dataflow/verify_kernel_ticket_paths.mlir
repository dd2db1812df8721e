// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s
// The tickets' discipline followed region by region: a ticket released once, in the block that
// acquired it; tickets named only as a queue handed them out; draws acquired, and drawn ahead
// exactly where the iteration that takes them runs; no block barrier while a worker of several
// holds an entry. (Programs from an audit; each verified before.)

// -----

// A split reduction's final stage (2 CTAs) takes a tile's 2 partials in a loop and releases
// them after it: the acquire's ticket leaves the loop body unreleased (and each CTA holds one
// partial while it waits for another's entry).
builtin.module {
  gpu.module @k {
    gpu.func @fanin(%q: !dataflow.queue<2 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
    gpu.func @final(%q: !dataflow.queue<2 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %last = scf.for %j = %c0 to %c2 step %c1 iter_args(%prev = %c0) -> (index) {
        %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<128xf32>>
        scf.yield %a : index
      }
      %first = arith.subi %last, %c1 : index
      dataflow.release_empty %q, %first : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @split {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<128xf32>>
    dataflow.stage @fan_in {kernel = @k::@fanin, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 64 : i64}
    dataflow.stage @final {kernel = @k::@final, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 64 : i64}
  }
}
// CHECK: dataflow-verify: stage @final: 'dataflow.acquire_full' on @q: the ticket is not released in the branch or loop body it is in, so some path keeps its e

// -----

// One CTA holds two tickets of a one-entry queue: the second waits for the entry it holds.
builtin.module {
  gpu.module @k {
    gpu.func @fanin(%q: !dataflow.queue<1 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<128xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<1 x memref<128xf32>>
      gpu.return
    }
    gpu.func @final(%q: !dataflow.queue<1 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %a = dataflow.acquire_full %q : !dataflow.queue<1 x memref<128xf32>>
      %b = dataflow.acquire_full %q : !dataflow.queue<1 x memref<128xf32>>
      dataflow.release_empty %q, %a : !dataflow.queue<1 x memref<128xf32>>
      dataflow.release_empty %q, %b : !dataflow.queue<1 x memref<128xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @split {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<128xf32>>
    dataflow.stage @fan_in {kernel = @k::@fanin, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 64 : i64}
    dataflow.stage @final {kernel = @k::@final, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 64 : i64}
  }
}
// CHECK: dataflow-verify: stage @final: 'dataflow.acquire_full' on @q while a worker holds 1 of its tickets: the queue has 1 entry, so the ticket it waits for

// -----

// Acquired in every iteration, released once after the loop.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%p = %c0) -> (index) {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %t : index
      }
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @leak {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' on @q: the ticket is not released in the branch or loop body it is in, so some path keeps its entry

// -----

// Released only where a flag holds: the other path keeps the entry.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index, %flag: i1) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.if %flag {
          dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        }
      }
      gpu.return
    }
  }
  dataflow.pipeline @branch {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' on @q inside a branch or loop releases a ticket acquired outside it: a path that skips it keeps th

// -----

// A multicast consumer stage releases its ticket twice: the entry is refilled while the other
// consumer stage still reads it.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      gpu.return
    }
    gpu.func @fast(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<1 x memref<64xf32>>
      dataflow.release_empty %q, %t : !dataflow.queue<1 x memref<64xf32>>
      dataflow.release_empty %q, %t : !dataflow.queue<1 x memref<64xf32>>
      gpu.return
    }
    gpu.func @slow(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<1 x memref<64xf32>>
      dataflow.release_empty %q, %t : !dataflow.queue<1 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @twice {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @a {kernel = @k::@fast, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @b {kernel = @k::@slow, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @a: 'dataflow.release_empty' on @q releases a ticket the worker does not hold here (never acquired on this path, or released al

// -----

// A release names the constant ticket 0, not the one acquired.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @fast(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %c0 = arith.constant 0 : index
      dataflow.release_empty %q, %c0 : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @slow(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @wrong {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @a {kernel = @k::@fast, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @b {kernel = @k::@slow, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @a: 'dataflow.release_empty' on @q releases a ticket that may be the result of 'arith.constant', not one a queue handed out: ti

// -----

// Every CTA is given the loop index as its ticket: four take ticket 0.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q at %i : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @given {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' on @q is given a ticket that may be the loop's induction variable, not one a queue handed out: tick

// -----

// A final stage taking 2 partials a tile gives its output the first partial's ticket:
// output tickets 0, 2, 4, ... and the consumer of ticket 1 waits forever.
builtin.module {
  gpu.module @k {
    gpu.func @fanin(%p: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %p : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %p, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @final(%p: !dataflow.queue<2 x memref<64xf32>>, %c: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %a = dataflow.acquire_full %p : !dataflow.queue<2 x memref<64xf32>>
      %b = dataflow.acquire_full %p : !dataflow.queue<2 x memref<64xf32>>
      %o = dataflow.acquire_empty %c at %a : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %p, %a : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %p, %b : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %c, %o : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @sink(%c: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %c : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %c, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @split_relay {
    dataflow.queue @p pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @c pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @fan_in {kernel = @k::@fanin, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [], outputs = [@p], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 64 : i64}
    dataflow.stage @final {kernel = @k::@final, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 32 : i64, dataflow.reads = {p = 2 : i64}}
    dataflow.stage @sink {kernel = @k::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 32 : i64}
  }
}
// CHECK: dataflow-verify: stage @final: 'dataflow.acquire_empty' on @c is given the ticket of another queue, but a tile of @final takes 2 entries of @p: the tw

// -----

// Drawing ahead in every iteration, unguarded: the last draw is never acquired and the next
// launch's tickets wait for it.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %d0 = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %next = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @ahead {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.draw_full' on @q draws a ticket no acquire in its block takes, nor a loop's next iteration (drawn under a guard t

// -----

// The first draw guarded by lb < ub, the next ones unguarded.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {
        %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %drawn : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %next = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @ahead {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.draw_full' on @q draws a ticket no acquire in its block takes, nor a loop's next iteration (drawn under a guard t

// -----

// The next draw guarded by i + 2 < n: the last iteration acquires the placeholder.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {
        %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %drawn : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %c2 = arith.constant 2 : index
        %i1 = arith.addi %i, %c2 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @ahead {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' takes a ticket the loop carries, but the next iteration's is not drawn exactly where one follows (a

// -----

// Guarded on both sides (the first under lb < ub, the next under i + 1 < n): proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 16 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {
        %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %drawn : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @ahead {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow.pipeline @ahead attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// A relay's workers draw an output ticket before their input's: a worker holds an unfilled
// output entry while it waits for an input another stage holds for it.
builtin.module {
  gpu.module @k {
    gpu.func @prod(%p: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %p : !dataflow.queue<1 x memref<128xf16>>
      dataflow.release_full %p, %t : !dataflow.queue<1 x memref<128xf16>>
      gpu.return
    }
    gpu.func @mid(%p: !dataflow.queue<1 x memref<128xf16>>, %c: !dataflow.queue<2 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %u = dataflow.acquire_empty %c : !dataflow.queue<2 x memref<128xf16>>
      %t = dataflow.acquire_full %p : !dataflow.queue<1 x memref<128xf16>>
      dataflow.release_empty %p, %t : !dataflow.queue<1 x memref<128xf16>>
      dataflow.release_full %c, %u : !dataflow.queue<2 x memref<128xf16>>
      gpu.return
    }
    gpu.func @join(%p: !dataflow.queue<1 x memref<128xf16>>, %c: !dataflow.queue<2 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %a = dataflow.acquire_full %p : !dataflow.queue<1 x memref<128xf16>>
      %b = dataflow.acquire_full %c at %a : !dataflow.queue<2 x memref<128xf16>>
      dataflow.release_empty %p, %a : !dataflow.queue<1 x memref<128xf16>>
      dataflow.release_empty %c, %b : !dataflow.queue<2 x memref<128xf16>>
      gpu.return
    }
  }
  dataflow.pipeline @residual {
    dataflow.queue @p pin_l2 : !dataflow.queue<1 x memref<128xf16>>
    dataflow.queue @c pin_l2 : !dataflow.queue<2 x memref<128xf16>>
    dataflow.stage @P {kernel = @k::@prod, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [@p], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 48 : i64}
    dataflow.stage @M {kernel = @k::@mid, resource = #dataflow.resource<tensor>, ctas = 2 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 48 : i64}
    dataflow.stage @J {kernel = @k::@join, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@p, @c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 48 : i64}
  }
}
// CHECK: dataflow-verify: stage @M: each of its 2 queue workers draws a ticket of @c and one of @p on its own: a worker can hold one while it waits for the oth

// -----

// A draw no acquire takes.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %unused = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @leak {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.draw_full' on @q draws a ticket no acquire takes: nobody fills or frees its entry, and every ticket after it wait

// -----

// Two workers a CTA (`threads 128` of 256) and a block barrier while one holds a ticket.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q threads 128 : !dataflow.queue<1 x memref<64xf32>>
        gpu.barrier
        dataflow.release_empty %q, %t threads 128 : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @groups {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'gpu.barrier' makes threads of more than one worker (256 of the block's, a worker being 128) wait for each other while a wo

// -----

// The first tile peeled off the loop: each tile acquires and releases one ticket, never two
// at once. Proved with two workers.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 16 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index

      %t0 = dataflow.acquire_full %q threads 128 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %t0 threads 128 : !dataflow.queue<2 x memref<64xf32>>
      scf.for %i = %c1 to %n step %c1 {
        %t = dataflow.acquire_full %q threads 128 : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t threads 128 : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @peeled {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow.pipeline @peeled attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// A pipeline in a nested module names its own module's kernels: this one never releases (a
// kernel of the same name outside, which does, is not the one it runs).
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
builtin.module @inner {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>

      gpu.return
    }
  }
  dataflow.pipeline @leak {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
}
// CHECK: dataflow-verify: stage @d: its kernel @k::@dst never runs 'dataflow.release_empty' on @q, one of its inputs: the queue's tickets would never all be ta

// -----

// A pipeline in a nested module whose kernels keep the discipline: proved.
builtin.module {
builtin.module @inner {
  gpu.module @k {
    gpu.func @src(%x: !dataflow.queue<2 x memref<64xf32>>, %y: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %t = dataflow.acquire_empty %x threads 128 : !dataflow.queue<2 x memref<64xf32>>
      %u = dataflow.acquire_empty %y at %t threads 128 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %x, %t threads 128 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %y, %u threads 128 : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @join(%x: !dataflow.queue<2 x memref<64xf32>>, %y: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %a = dataflow.acquire_full %x threads 128 : !dataflow.queue<2 x memref<64xf32>>
      %b = dataflow.acquire_full %y at %a threads 128 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %x, %a threads 128 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %y, %b threads 128 : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @two {
    dataflow.queue @x pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @y pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<tensor>, ctas = 2 : i64, inputs = [], outputs = [@x, @y], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @j {kernel = @k::@join, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@x, @y], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
}
// CHECK: dataflow.pipeline @two attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// `dataflow.reads` with a count that is no integer (it was read as 1).
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %d0 = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %next = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @ahead {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i32}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i32, dataflow.reads = {q = "two"}}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.reads' of @q must be a positive integer, got "two"

// -----

// An acquire given a ticket of its own queue the worker took already: two consumer stages, and
// @d frees ticket 0 twice (the producer refills entry 0 while @o reads it).
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %b = dataflow.acquire_full %q at %a : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %b : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @other(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @o {kernel = @k::@other, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' on @q takes a ticket this worker took already: its entry would be filled, or freed, twice

// -----

// A draw taken by an acquire only where a flag holds.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index, %flag: i1) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %d = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.if %flag {
          %a = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        }
      }
      gpu.return
    }
    gpu.func @other(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @o {kernel = @k::@other, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.draw_full' on @q draws a ticket no acquire in its block takes, nor a loop's next iteration (drawn under a guard t

// -----

// One ticket drawn before the loop and taken in every iteration.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %d = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @other(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @o {kernel = @k::@other, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.draw_full' on @q draws a ticket no acquire in its block takes, nor a loop's next iteration (drawn under a guard t

// -----

// An inner loop takes the outer loop's ticket in each of its iterations.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %m = arith.constant 2 : index
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {
        %dr = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %dr : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        scf.for %j = %c0 to %m step %c1 {
          %a = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        }
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %dr = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %dr : index
        } else {
          scf.yield %d : index
        }
        scf.yield %next : index
      }
      gpu.return
    }
    gpu.func @other(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @o {kernel = @k::@other, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' on @q takes, in every iteration of the 'scf.for' around it, a ticket drawn outside it: the same tic

// -----

// The first draw outside the outer loop: every outer iteration starts from the same ticket.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index, %m: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {
        %dr = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %dr : index
      } else {
        scf.yield %c0 : index
      }
      scf.for %o = %c0 to %m step %c1 {
        %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
          %a = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
          %i1 = arith.addi %i, %c1 : index
          %more = arith.cmpi ult, %i1, %n : index
          %next = scf.if %more -> (index) {
            %dr = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
            scf.yield %dr : index
          } else {
            scf.yield %c0 : index
          }
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %next : index
        }
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' takes a ticket the loop carries, but the ticket the first iteration takes is not drawn exactly wher

// -----

// A relay gives its output the input's ticket twice.
builtin.module {
  gpu.module @k {
    gpu.func @prod(%p: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %p : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %p, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @relay(%p: !dataflow.queue<2 x memref<64xf32>>, %c: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %a = dataflow.acquire_full %p : !dataflow.queue<2 x memref<64xf32>>
      %o1 = dataflow.acquire_empty %c at %a : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %c, %o1 : !dataflow.queue<2 x memref<64xf32>>
      %o2 = dataflow.acquire_empty %c at %a : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %c, %o2 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %p, %a : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @sink(%c: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %c : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %c, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @twice {
    dataflow.queue @p pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @c pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @P {kernel = @k::@prod, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [@p], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @R {kernel = @k::@relay, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @S {kernel = @k::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @R: 'dataflow.acquire_empty' on @c takes a ticket this worker took already: its entry would be filled, or freed, twice

// -----

// A kernel of several blocks (cf branches): not followed.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
      cf.br ^bb1
    ^bb1:
      %b = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: its kernel @k::@dst is made of several blocks: dataflow-verify follows structured control flow (scf) only

// -----

// `tile.arrive` without `threads` (the block's barrier) while one of two workers holds a ticket.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>, %n: index, %cnt: memref<64xi32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_full %q threads 128 : !dataflow.queue<1 x memref<64xf32>>
        %last = tile.arrive %cnt[%i] of 4 : memref<64xi32>
        dataflow.release_empty %q, %t threads 128 : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'tile.arrive' makes threads of more than one worker (256 of the block's, a worker being 128) wait for each other while a wo

// -----

// A queue handed to a call: what the callee does with its tickets is not followed.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
      func.call @helper(%q) : (!dataflow.queue<2 x memref<64xf32>>) -> ()
      gpu.return
    }
    func.func @helper(%h: !dataflow.queue<2 x memref<64xf32>>) {
      %b = dataflow.acquire_full %h : !dataflow.queue<2 x memref<64xf32>>
      func.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'func.call' takes one of the kernel's queues: only the queue ops may (what it does with the tickets cannot be followed)

// -----

// A queue carried by scf.if: refused in words (it crashed).
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %true = arith.constant true
      %qq = scf.if %true -> (!dataflow.queue<2 x memref<64xf32>>) {
        scf.yield %q : !dataflow.queue<2 x memref<64xf32>>
      } else {
        scf.yield %q : !dataflow.queue<2 x memref<64xf32>>
      }
      %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
      %b = dataflow.acquire_full %qq : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'scf.yield' takes one of the kernel's queues: only the queue ops may (what it does with the tickets cannot be followed)

// -----

// The guards written the other way round (n > 0, n > i + 1): proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 16 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %run = arith.cmpi sgt, %n, %c0 : index
      %d0 = scf.if %run -> (index) {
        %dr = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %dr : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %a = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %dr = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %dr : index
        } else {
          scf.yield %c0 : index
        }
        dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// One worker takes its next tile before it gives the current one back: the loop carries the
// held ticket (two at once, of two entries), the last released after it. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 16 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 16 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c1 to %n step %c1 iter_args(%cur = %t0) -> (index) {
        %nx = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %cur : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %nx : index
      }
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// The same with one entry: the next ticket waits for the entry the worker holds.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<1 x memref<64xf32>>
      %last = scf.for %i = %c1 to %n step %c1 iter_args(%cur = %t0) -> (index) {
        %nx = dataflow.acquire_full %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_empty %q, %cur : !dataflow.queue<1 x memref<64xf32>>
        scf.yield %nx : index
      }
      dataflow.release_empty %q, %last : !dataflow.queue<1 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' on @q while a worker holds 1 of its tickets: the queue has 1 entry, so the ticket it waits for need

// -----

// The same never giving the carried ticket back.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c1 to %n step %c1 iter_args(%cur = %t0) -> (index) {
        %nx = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %nx : index
      }
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' on @q: the ticket is not released in the branch or loop body it is in, so some path keeps its entry

// -----

// The same with two workers: each holds a ticket while it waits for the next.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c1 to %n step %c1 iter_args(%cur = %t0) -> (index) {
        %nx = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %cur : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %nx : index
      }
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: each of its 2 queue workers draws 2 tickets of @q for a tile, one at a time: two workers holding part of their tiles can wa

// -----

// The same without the release after the loop.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c1 to %n step %c1 iter_args(%cur = %t0) -> (index) {
        %nx = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %cur : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %nx : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' on @q: the ticket is not released in the kernel, so some path keeps its entry (a release in the sam

// -----

// The ticket given back once in each side of a branch: once on every path. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 16 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %c1 : index
        %islast = arith.cmpi eq, %i1, %n : index
        scf.if %islast {
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        } else {
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        }
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// Given back twice on one side.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %c1 : index
        %islast = arith.cmpi eq, %i1, %n : index
        scf.if %islast {
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        } else {
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        }
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' on @q releases a ticket the worker does not hold here (never acquired on this path, or released al

// -----

// Given back on both sides and once more after the branch.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %c1 : index
        %islast = arith.cmpi eq, %i1, %n : index
        scf.if %islast {
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        } else {
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
        }
        dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' on @q releases a ticket the worker does not hold here (never acquired on this path, or released al

// -----

// Each side of a branch acquires the ticket the branch hands on, released after it (two
// workers, one ticket a tile on every path). Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %wide: i1) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = scf.if %wide -> (index) {
        %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %a : index
      } else {
        %b = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %b : index
      }
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @branches {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}
// CHECK: dataflow.pipeline @branches attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// Only one side acquires; the other hands on a constant.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %wide: i1) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = scf.if %wide -> (index) {
        %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %a : index
      } else {
        %b = arith.constant 0 : index
        scf.yield %b : index
      }
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @branches {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' on @q: the ticket is not released in the branch or loop body it is in, so some path keeps its entry

// -----

// Both sides acquire, nothing releases after the branch.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %wide: i1) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = scf.if %wide -> (index) {
        %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %a : index
      } else {
        %b = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %b : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @branches {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: its kernel @k::@dst never runs 'dataflow.release_empty' on @q, one of its inputs: the queue's tickets would never all be ta

// -----

// The first draw guarded unsigned (`0 <u n`) where n is negative: the loop (signed) does not
// run but the draw does, and nobody takes its ticket. Counted per worker: refused.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.subi %c0, %c1 : index
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {
        %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %drawn : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: its kernel, launched with 2 CTA(s), draws 2 ticket(s) of @q ahead a launch but acquires 0 of them: a drawn ticket no one takes keeps its entry, and every later ticket of the queue waits for it

// -----

// A ticket a branch hands on, given back inside the side that acquired it: released again
// after the branch, its entry's count runs ahead (a producer refills an entry still read).
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %bid = gpu.block_id x
      %z = arith.cmpi eq, %bid, %c0 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = scf.if %z -> (index) {
          %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
          dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %a : index
        } else {
          %b = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %b : index
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'scf.yield' hands on (result 0 of 'scf.if') a ticket the worker no longer holds here (released already, or handed on at another result)

// -----

// One acquire handed on at two results, both released after the branch.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %bid = gpu.block_id x
      %z = arith.cmpi eq, %bid, %c0 : index
      scf.for %i = %c0 to %n step %c1 {
        %t, %u = scf.if %z -> (index, index) {
          %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %a, %a : index, index
        } else {
          %b = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %b, %b : index, index
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %u : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'scf.yield' hands on (result 1 of 'scf.if') a ticket the worker no longer holds here

// -----

// A loop that hands on its new ticket but also gives it back in the iteration.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %n = arith.constant 8 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c1 to %n step %c1 iter_args(%cur = %t0) -> (index) {
        %nx = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %cur : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %nx : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %nx : index
      }
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'scf.yield' hands on (result 0 of 'scf.for') a ticket the worker no longer holds here

// -----

// minui(bid - 1, 3): CTA 0's bid - 1 is huge unsigned, so it takes 4 tickets, not 0: an
// unsigned op on a value that may be negative is not counted as the signed one.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %bid = gpu.block_id x
      %m1 = arith.subi %bid, %c1 : index
      %m = arith.minui %m1, %c3 : index
      %ub = arith.addi %m, %c1 : index
      scf.for %i = %c0 to %ub step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: the tickets its kernel takes a launch cannot be counted against its 1 'tiles': 'dataflow.acquire_full' may or may not run

// -----

// Drawn ahead from a loop that starts at the block id, both guards unsigned (`bid <u n`,
// `i + step <u n`): the block id is not negative, so they compare as signed ones. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 16 : index
      scf.for %i = %c0 to %n step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %n = arith.constant 16 : index
      %bid = gpu.block_id x
      %ctas = gpu.grid_dim x
      %run = arith.cmpi ult, %bid, %n : index
      %d0 = scf.if %run -> (index) {
        %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %drawn : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %bid to %n step %ctas iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %ctas : index
        %more = arith.cmpi ugt, %n, %i1 : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 3 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// A relay that fills its output once with a ticket it draws and once `at` its input's: the
// output's counter moves on the draw only, so the next launch draws a ticket already filled
// and the one after it is never filled (a second audit's differential).
builtin.module {
  gpu.module @k {
    gpu.func @src(%a: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        %t = dataflow.acquire_empty %a : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %a, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @relay(%a: !dataflow.queue<2 x memref<64xf32>>, %b: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %x0 = dataflow.acquire_full %a : !dataflow.queue<2 x memref<64xf32>>
      %y0 = dataflow.acquire_empty %b : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %b, %y0 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %a, %x0 : !dataflow.queue<2 x memref<64xf32>>
      %x1 = dataflow.acquire_full %a : !dataflow.queue<2 x memref<64xf32>>
      %y1 = dataflow.acquire_empty %b at %x1 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %b, %y1 : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_empty %a, %x1 : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%b: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        %t = dataflow.acquire_full %b : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %b, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @a pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @b pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@a], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @r {kernel = @k::@relay, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@a], outputs = [@b], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@b], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}
// CHECK: dataflow-verify: stage @r: 'dataflow.acquire_empty' on @b takes the ticket of another queue (`at`) where another acquire of the kernel draws its own

// -----

// Drawn ahead from a loop that starts at maxsi(block id, 0), guarded unsigned: not negative.
// Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %bid = gpu.block_id x
      %lb = arith.maxsi %bid, %c0 : index
      %g = arith.cmpi ult, %lb, %c4 : index
      %d0 = scf.if %g -> (index) {
        %d = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %d : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %lb to %c4 step %c2 iter_args(%dc = %d0) -> (index) {
        %i1 = arith.addi %i, %c2 : index
        %g1 = arith.cmpi ult, %i1, %c4 : index
        %nx = scf.if %g1 -> (index) {
          %d = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %d : index
        } else {
          scf.yield %c0 : index
        }
        %t = dataflow.acquire_full %q at %dc : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %nx : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// A loop that carries a held ticket and hands on the next one acquired in each side of a
// branch. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %c4b = arith.constant 4 : index
      %last = scf.for %i = %c1 to %c4b step %c1 iter_args(%cur = %t0) -> (index) {
        %r = arith.remui %i, %c2 : index
        %b = arith.cmpi eq, %r, %c0 : index
        %nx = scf.if %b -> (index) {
          %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %a : index
        } else {
          %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %a : index
        }
        dataflow.release_empty %q, %cur : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %nx : index
      }
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced
