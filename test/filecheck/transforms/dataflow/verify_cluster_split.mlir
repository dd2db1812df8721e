// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s

// A split reduction in clusters: each cluster's fan-in CTA fills 16 partials a launch into its
// cluster's ring, and its final CTA adds them four at a time (`dataflow.reads`, 4 tiles of 4
// tickets). The ring has one worker at each end, so the final's tile taken one partial at a
// time cannot wait for a worker of another CTA; the lanes balance in tickets (16 each).
builtin.module {
  gpu.module @k {
    gpu.func @fanin(%q: !dataflow.queue<4 x memref<64xf32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %count = arith.constant 16 : index
      scf.for %i = %c0 to %count step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_full %q, %t : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
      }
      gpu.return
    }
    gpu.func @final(%q: !dataflow.queue<4 x memref<64xf32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %count = arith.constant 4 : index
      scf.for %i = %c0 to %count step %c1 {
        %a = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        %b = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        %c = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        %d = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %a : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %b : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %c : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %d : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @split {
    dataflow.queue @q cluster : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
    dataflow.stage @fan_in {kernel = @k::@fanin, resource = #dataflow.resource<tensor>, ctas = 66 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 1056 : i64}
    dataflow.stage @final {kernel = @k::@final, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 264 : i64, dataflow.reads = {q = 4 : i64}}
  }
}
// CHECK: dataflow.pipeline @split attributes {dataflow.verified = "co-resident: each cluster's 2 blocks start together {{.*}}; tickets balanced on 1 queue(s), in every cluster"}

// -----

// One producer CTA a cluster feeding two consumer stages through two rings, drawing a ticket
// of each on its own: each ring has its one worker at each end, so the k-th ticket of both
// is the CTA's k-th tile.
builtin.module {
  gpu.module @k {
    gpu.func @fork(%a: !dataflow.queue<2 x memref<64xf32, 0 : i64>>, %b: !dataflow.queue<2 x memref<64xf32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %count = arith.constant 8 : index
      scf.for %i = %c0 to %count step %c1 {
        %s = dataflow.acquire_empty %a : !dataflow.queue<2 x memref<64xf32, 0 : i64>>
        %t = dataflow.acquire_empty %b : !dataflow.queue<2 x memref<64xf32, 0 : i64>>
        dataflow.release_full %a, %s : !dataflow.queue<2 x memref<64xf32, 0 : i64>>
        dataflow.release_full %b, %t : !dataflow.queue<2 x memref<64xf32, 0 : i64>>
      }
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xf32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %count = arith.constant 8 : index
      scf.for %i = %c0 to %count step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32, 0 : i64>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @fork {
    dataflow.queue @a cluster : !dataflow.queue<2 x memref<64xf32, 0 : i64>>
    dataflow.queue @b cluster : !dataflow.queue<2 x memref<64xf32, 0 : i64>>
    dataflow.stage @src {kernel = @k::@fork, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [], outputs = [@a, @b], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 352 : i64}
    dataflow.stage @left {kernel = @k::@sink, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [@a], outputs = [], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 352 : i64}
    dataflow.stage @right {kernel = @k::@sink, resource = #dataflow.resource<simt>, ctas = 44 : i64, inputs = [@b], outputs = [], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 352 : i64}
  }
}
// CHECK: dataflow.pipeline @fork attributes {dataflow.verified = "co-resident: each cluster's 3 blocks start together {{.*}}; tickets balanced on 2 queue(s), in every cluster"}

// -----

// The split reduction whose stages balance in total (1056 tickets) but not in the clusters: the
// first 33 fan-in CTAs fill 32 partials each, the others none, while every final CTA adds 16
// (4 tiles of 4): cluster 0's ring is left 16 partials, cluster 33's final waits for 16.
builtin.module {
  gpu.module @k {
    gpu.func @fanin(%q: !dataflow.queue<4 x memref<64xf32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cta = gpu.block_id x
      %half = arith.constant 33 : index
      %low = arith.cmpi ult, %cta, %half : index
      %many = arith.constant 32 : index
      %none = arith.constant 0 : index
      %count = arith.select %low, %many, %none : index
      scf.for %i = %c0 to %count step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_full %q, %t : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
      }
      gpu.return
    }
    gpu.func @final(%q: !dataflow.queue<4 x memref<64xf32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %count = arith.constant 4 : index
      scf.for %i = %c0 to %count step %c1 {
        %a = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        %b = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        %c = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        %d = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %a : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %b : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %c : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
        dataflow.release_empty %q, %d : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @split {
    dataflow.queue @q cluster : !dataflow.queue<4 x memref<64xf32, 0 : i64>>
    dataflow.stage @fan_in {kernel = @k::@fanin, resource = #dataflow.resource<tensor>, ctas = 66 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 1056 : i64}
    dataflow.stage @final {kernel = @k::@final, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 264 : i64, dataflow.reads = {q = 4 : i64}}
  }
}
// CHECK: dataflow-verify: cluster queue @q: in cluster 0, stage @fan_in fills 32 ticket(s) a launch but @final takes 16: a launch would leave 16
