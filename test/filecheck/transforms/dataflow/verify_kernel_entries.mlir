// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s
// An entry is read or written only while the worker holds its ticket: after the acquire that
// takes it and before its release. Before, the ticket's producer (or the consumers of the
// entry's previous round) may still be at it; after, the next round's may. An entry's address
// (`dataflow.entry`, views of it, values handed on through scf loops and branches) names the
// (queue, ticket) it belongs to; an acquire `at` a ticket holds that ticket's entry. Each
// program the pass refuses below balances its tickets and keeps their discipline, so the entry
// use is its only fault (one, an entry of a ticket drawn ahead, the dialect refuses first); the
// last programs are the same ones written correctly.

// A consumer reads its entry after `dataflow.release_empty` gave it back: the producer may
// already be filling the entry's next round.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        %x = memref.load %e[%c0] : memref<64xf32>
        memref.store %x, %out[%i] : memref<4xf32>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'memref.load' uses the entry of a ticket of @q that the worker does not hold here (before the acquire that takes it, or after its release): an entry is the worker's only between the two, else another worker may be writing or reading it

// -----

// A producer draws its ticket ahead and stores into that ticket's entry before the
// `acquire_empty ... at` that takes it: the consumers of the entry's previous round may still
// be reading it. The dialect refuses it before the pass runs: a drawn ticket may reach only
// the `at` of an acquire (its entry can be named only from the acquire's result, after it).
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %d = dataflow.draw_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %d : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        %t = dataflow.acquire_empty %q at %d : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %x = memref.load %e[%c0] : memref<64xf32>
        memref.store %x, %out[%i] : memref<4xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: 'dataflow.draw_empty': the drawn ticket is the worker leader's alone until a 'dataflow.acquire_empty' on the same queue takes it (`at`) and hands it out, but it reaches 'dataflow.entry'

// -----

// A consumer that draws its next ticket ahead (under the guards the loop's iterations run)
// reads the entry of the ticket `acquire_full ... at` took after releasing it: the entry is
// named by the drawn ticket the acquire holds, and it is given back.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %run = arith.cmpi ult, %c0, %c4 : index
      %d0 = scf.if %run -> (index) {
        %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %drawn : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %c4 : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        %x = memref.load %e[%c0] : memref<64xf32>
        memref.store %x, %out[%i] : memref<4xf32>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'memref.load' uses the entry of a ticket of @q that the worker does not hold here (before the acquire that takes it, or after its release): an entry is the worker's only between the two, else another worker may be writing or reading it

// -----

// A relay takes its input ticket of @a and fills @b's entry of the same ticket (the
// acquire_empty on @b is given it, `at`), but writes that @b entry before the acquire_empty:
// @d may still be reading the entry's previous round. Reading its @a entry is fine (held).
builtin.module {
  gpu.module @k {
    gpu.func @src(%a: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %a : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %a, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %a, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @relay(%a: !dataflow.queue<2 x memref<64xf32>>, %b: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %x = dataflow.acquire_full %a : !dataflow.queue<2 x memref<64xf32>>
        %ea = dataflow.entry %a, %x : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %v = memref.load %ea[%c0] : memref<64xf32>
        %eb = dataflow.entry %b, %x : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %eb[%c0] : memref<64xf32>
        %y = dataflow.acquire_empty %b at %x : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %b, %y : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %a, %x : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%b: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %b : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %b, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %x = memref.load %e[%c0] : memref<64xf32>
        memref.store %x, %out[%i] : memref<4xf32>
        dataflow.release_empty %b, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @a pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @b pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@a], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @r {kernel = @k::@relay, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@a], outputs = [@b], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@b], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @r: 'memref.store' uses the entry of a ticket of @b that the worker does not hold here (before the acquire that takes it, or after its release): an entry is the worker's only between the two, else another worker may be writing or reading it

// -----

// A producer hands each tile's entry on to the next iteration (an scf.for iteration argument)
// and writes its tail there, after the ticket's release: the consumer may be reading it.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %t0 = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      %e0 = dataflow.entry %q, %t0 : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
      memref.store %v, %e0[%c0] : memref<64xf32>
      dataflow.release_full %q, %t0 : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c1 to %c4 step %c1 iter_args(%prev = %e0) -> (memref<64xf32>) {
        memref.store %v, %prev[%c1] : memref<64xf32>
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %e : memref<64xf32>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %x = memref.load %e[%c0] : memref<64xf32>
        memref.store %x, %out[%i] : memref<4xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @s: 'memref.store' uses the entry of a ticket of @q handed on from the iteration or branch that held it (before the acquire that takes it, or after its release): an entry is the worker's only between the two, else another worker may be writing or reading it

// -----

// A view of the entry (memref.subview, side-effect free: it only computes an address) read
// after the release: the view addresses the released entry.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %half = memref.subview %e[32] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1], offset: 32>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        %x = memref.load %half[%c0] : memref<32xf32, strided<[1], offset: 32>>
        memref.store %x, %out[%i] : memref<4xf32>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'memref.load' uses the entry of a ticket of @q that the worker does not hold here (before the acquire that takes it, or after its release): an entry is the worker's only between the two, else another worker may be writing or reading it

// -----

// Loads and stores (and a view) between the acquire and the release, on both ends, the
// consumer's in a loop nested inside the held region too. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        %half = memref.subview %e[32] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1], offset: 32>>
        memref.store %v, %half[%c0] : memref<32xf32, strided<[1], offset: 32>>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %half = memref.subview %e[32] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1], offset: 32>>
        %x = memref.load %half[%c0] : memref<32xf32, strided<[1], offset: 32>>
        %y = memref.load %e[%c0] : memref<64xf32>
        %s0 = arith.addf %x, %y : f32
        %c8 = arith.constant 8 : index
        %s = scf.for %j = %c1 to %c8 step %c1 iter_args(%acc = %s0) -> (f32) {
          %z = memref.load %e[%j] : memref<64xf32>
          %acc1 = arith.addf %acc, %z : f32
          scf.yield %acc1 : f32
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        memref.store %s, %out[%i] : memref<4xf32>
      }
      gpu.return
    }
  }
  dataflow.pipeline @held {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @held attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// The draw-ahead consumer written correctly: the entry of the ticket `acquire_full ... at`
// took (named by the drawn ticket it holds) is read before its release. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %run = arith.cmpi ult, %c0, %c4 : index
      %d0 = scf.if %run -> (index) {
        %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %drawn : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x memref<64xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %c4 : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_full %q : !dataflow.queue<2 x memref<64xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %x = memref.load %e[%c0] : memref<64xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        memref.store %x, %out[%i] : memref<4xf32>
        scf.yield %next : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @ahead {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @ahead attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// The relay written correctly: the @b entry named by the input ticket is computed before the
// acquire_empty on @b (the address only) and written after it, `at` that ticket. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%a: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %a : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %a, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %a, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @relay(%a: !dataflow.queue<2 x memref<64xf32>>, %b: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %x = dataflow.acquire_full %a : !dataflow.queue<2 x memref<64xf32>>
        %ea = dataflow.entry %a, %x : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %v = memref.load %ea[%c0] : memref<64xf32>
        %eb = dataflow.entry %b, %x : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %y = dataflow.acquire_empty %b at %x : !dataflow.queue<2 x memref<64xf32>>
        memref.store %v, %eb[%c0] : memref<64xf32>
        %ey = dataflow.entry %b, %y : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %ey[%c1] : memref<64xf32>
        dataflow.release_full %b, %y : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %a, %x : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%b: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %b : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %b, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %x = memref.load %e[%c0] : memref<64xf32>
        memref.store %x, %out[%i] : memref<4xf32>
        dataflow.release_empty %b, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @relayed {
    dataflow.queue @a pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.queue @b pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@a], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @r {kernel = @k::@relay, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@a], outputs = [@b], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@b], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @relayed attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// A consumer that takes its next tile before it gives the current one back: the loop carries
// the held ticket, each iteration reads the carried ticket's entry, releases it and hands on
// the one it acquired; the last is read after the loop, before its release. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c1 to %c4 step %c1 iter_args(%cur = %t0) -> (index) {
        %nx = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %cur : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %x = memref.load %e[%c0] : memref<64xf32>
        dataflow.release_empty %q, %cur : !dataflow.queue<2 x memref<64xf32>>
        memref.store %x, %out[%i] : memref<4xf32>
        scf.yield %nx : index
      }
      %el = dataflow.entry %q, %last : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
      %y = memref.load %el[%c0] : memref<64xf32>
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<64xf32>>
      memref.store %y, %out[%c0] : memref<4xf32>
      gpu.return
    }
  }
  dataflow.pipeline @carried {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @carried attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced


// -----

// An entry's address handed to the next iteration (iter_args): there it names the entry of the
// previous iteration's ticket, released already, though this iteration's ticket has the same
// SSA name. Refused: the store writes an entry its consumer may be reading.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>, %scratch: memref<64xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%prev = %scratch) -> (memref<64xf32>) {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        memref.store %v, %prev[%c1] : memref<64xf32>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %e : memref<64xf32>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %x = memref.load %e[%c0] : memref<64xf32>
        memref.store %x, %out[%i] : memref<4xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p1 {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @s: 'memref.store' uses the entry of a ticket of @q handed on from the iteration or branch that held it (before the acquire that takes it, or after its release)

// -----

// A loop carrying a held ticket and, beside it, its entry's address: in the body the address
// names the carried ticket, which the worker holds until the release. Verified.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        memref.store %v, %e[%c0] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %t0 = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %e0 = dataflow.entry %q, %t0 : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
      %last, %lm = scf.for %i = %c1 to %c4 step %c1 iter_args(%cur = %t0, %m = %e0) -> (index, memref<64xf32>) {
        %nx = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %x = memref.load %m[%c0] : memref<64xf32>
        dataflow.release_empty %q, %cur : !dataflow.queue<2 x memref<64xf32>>
        memref.store %x, %out[%i] : memref<4xf32>
        %en = dataflow.entry %q, %nx : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        scf.yield %nx, %en : index, memref<64xf32>
      }
      %y = memref.load %lm[%c0] : memref<64xf32>
      dataflow.release_empty %q, %last : !dataflow.queue<2 x memref<64xf32>>
      memref.store %y, %out[%c0] : memref<4xf32>
      gpu.return
    }
  }
  dataflow.pipeline @carried_address {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @carried_address attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced
