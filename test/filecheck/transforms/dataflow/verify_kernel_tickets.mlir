// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s

// A join (Kitsune Fig. 2c, a residual): @join takes @p and @c. Drawing a ticket of each on its
// own, one of 4 workers can hold @p's ticket t while it waits for @c's, held by a worker that
// waits for @p's (the queue simulator's deadlock on this pipeline).
builtin.module {
  gpu.module @k {
    gpu.func @prod(%p: !dataflow.queue<2 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %p : !dataflow.queue<2 x memref<128xf16>>
      dataflow.release_full %p, %t : !dataflow.queue<2 x memref<128xf16>>
      gpu.return
    }
    gpu.func @mid(%p: !dataflow.queue<2 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %p : !dataflow.queue<2 x memref<128xf16>>
      %u = dataflow.acquire_empty %c at %t : !dataflow.queue<1 x memref<128xf16>>
      dataflow.release_empty %p, %t : !dataflow.queue<2 x memref<128xf16>>
      dataflow.release_full %c, %u : !dataflow.queue<1 x memref<128xf16>>
      gpu.return
    }
    gpu.func @join(%p: !dataflow.queue<2 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %a = dataflow.acquire_full %p : !dataflow.queue<2 x memref<128xf16>>
      %b = dataflow.acquire_full %c : !dataflow.queue<1 x memref<128xf16>>
      dataflow.release_empty %p, %a : !dataflow.queue<2 x memref<128xf16>>
      dataflow.release_empty %c, %b : !dataflow.queue<1 x memref<128xf16>>
      gpu.return
    }
  }
  dataflow.pipeline @residual {
    dataflow.queue @p pin_l2 : !dataflow.queue<2 x memref<128xf16>>
    dataflow.queue @c pin_l2 : !dataflow.queue<1 x memref<128xf16>>
    dataflow.stage @P {kernel = @k::@prod, resource = #dataflow.resource<tensor>, ctas = 2 : i64, inputs = [], outputs = [@p], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 48 : i64}
    dataflow.stage @C {kernel = @k::@mid, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 48 : i64}
    dataflow.stage @J {kernel = @k::@join, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@p, @c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 48 : i64}
  }
}
// CHECK: dataflow-verify: stage @J: each of its 4 queue workers draws a ticket of @p and one of @c on its own: a worker can hold one while it waits for the other's, held by a worker that waits for its own; draw one and give it to the other (`at`)

// -----

// The same join, @c's ticket given as the one drawn on @p (@mid relays its tickets, so both
// name the same tile): proved.
builtin.module {
  gpu.module @k {
    gpu.func @prod(%p: !dataflow.queue<2 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %p : !dataflow.queue<2 x memref<128xf16>>
      dataflow.release_full %p, %t : !dataflow.queue<2 x memref<128xf16>>
      gpu.return
    }
    gpu.func @mid(%p: !dataflow.queue<2 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_full %p : !dataflow.queue<2 x memref<128xf16>>
      %u = dataflow.acquire_empty %c at %t : !dataflow.queue<1 x memref<128xf16>>
      dataflow.release_empty %p, %t : !dataflow.queue<2 x memref<128xf16>>
      dataflow.release_full %c, %u : !dataflow.queue<1 x memref<128xf16>>
      gpu.return
    }
    gpu.func @join(%p: !dataflow.queue<2 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %a = dataflow.acquire_full %p : !dataflow.queue<2 x memref<128xf16>>
      %b = dataflow.acquire_full %c at %a : !dataflow.queue<1 x memref<128xf16>>
      dataflow.release_empty %p, %a : !dataflow.queue<2 x memref<128xf16>>
      dataflow.release_empty %c, %b : !dataflow.queue<1 x memref<128xf16>>
      gpu.return
    }
  }
  dataflow.pipeline @residual {
    dataflow.queue @p pin_l2 : !dataflow.queue<2 x memref<128xf16>>
    dataflow.queue @c pin_l2 : !dataflow.queue<1 x memref<128xf16>>
    dataflow.stage @P {kernel = @k::@prod, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [], outputs = [@p], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @C {kernel = @k::@mid, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @J {kernel = @k::@join, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@p, @c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @residual attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced on 2 queue(s)"}

// -----

// A split reduction's final stage: a tile adds 2 partials (`dataflow.reads`), each drawn by an
// acquire of its own; with 2 CTAs each can hold one partial and wait for the other's entry.
builtin.module {
  gpu.module @k {
    gpu.func @fanin(%q: !dataflow.queue<2 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
    gpu.func @final(%q: !dataflow.queue<2 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<128xf32>>
      %b = dataflow.acquire_full %q : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %q, %b : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @split {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<128xf32>>
    dataflow.stage @fan_in {kernel = @k::@fanin, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 64 : i64}
    dataflow.stage @final {kernel = @k::@final, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 32 : i64, dataflow.reads = {q = 2 : i64}}
  }
}
// CHECK: dataflow-verify: stage @final: each of its 2 queue workers draws 2 tickets of @q for a tile, one at a time: two workers holding part of their tiles can wait for each other forever (one worker per stage, or one ticket a tile)

// -----

// One CTA takes them: its draws are consecutive tickets, nobody else holds any (proved).
builtin.module {
  gpu.module @k {
    gpu.func @fanin(%q: !dataflow.queue<2 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
    gpu.func @final(%q: !dataflow.queue<2 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %a = dataflow.acquire_full %q : !dataflow.queue<2 x memref<128xf32>>
      %b = dataflow.acquire_full %q : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %q, %a : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %q, %b : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @split {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<128xf32>>
    dataflow.stage @fan_in {kernel = @k::@fanin, resource = #dataflow.resource<tensor>, ctas = 2 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @final {kernel = @k::@final, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1 : i64, dataflow.reads = {q = 2 : i64}}
  }
}
// CHECK: dataflow.pipeline @split attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced on 1 queue(s)"}

// -----

// A consumer that never gives its entries back: the producer's second round waits forever.
builtin.module {
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
// CHECK: dataflow-verify: stage @d: its kernel @k::@dst never runs 'dataflow.release_empty' on @q, one of its inputs: the queue's tickets would never all be taken or given back

// -----

// A consumer taking its input at the producer's end.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @backwards {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 16 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_empty' on @q, one of its inputs: an input is taken at its consumer end only
