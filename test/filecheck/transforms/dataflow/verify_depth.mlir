// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s

// A ring is deep enough when N >= P + C - 1, P and C the most tickets one worker of each end
// spans at a wait. Producer: pairs (acquire 2, then release 2, P = 2); consumer: a sliding
// window (takes its next entry before giving the current one back, C = 2). With 2 entries
// the producer holds ticket 2 and waits for ticket 3 (entry 1, round 1), which the consumer
// holds as ticket 1 while it waits for ticket 2 to be filled.
builtin.module {
  gpu.module @kernels {
    gpu.func @prod(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 4 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_empty %h : !dataflow.queue<2 x memref<64xf32>>
        %b = dataflow.acquire_empty %h : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %h, %a : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_full %h, %b : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @cons(%h: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 7 : index
      %first = dataflow.acquire_full %h : !dataflow.queue<2 x memref<64xf32>>
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%cur = %first) -> (index) {
        %next = dataflow.acquire_full %h : !dataflow.queue<2 x memref<64xf32>>
        dataflow.release_empty %h, %cur : !dataflow.queue<2 x memref<64xf32>>
        scf.yield %next : index
      }
      dataflow.release_empty %h, %last : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@prod, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @b {kernel = @kernels::@cons, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}

// CHECK: verify_depth.mlir:37:5: dataflow-verify: queue @h has 2 entries, but a worker of its producer @a holds up to 2 of its tickets at once and one of its consumer @b up to 2: it needs at least 3 (producer + consumer - 1), else each end can hold the entries the other waits for

// -----

// The same pipeline with 3 entries: proved.
builtin.module {
  gpu.module @kernels {
    gpu.func @prod(%h: !dataflow.queue<3 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 4 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_empty %h : !dataflow.queue<3 x memref<64xf32>>
        %b = dataflow.acquire_empty %h : !dataflow.queue<3 x memref<64xf32>>
        dataflow.release_full %h, %a : !dataflow.queue<3 x memref<64xf32>>
        dataflow.release_full %h, %b : !dataflow.queue<3 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @cons(%h: !dataflow.queue<3 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 7 : index
      %first = dataflow.acquire_full %h : !dataflow.queue<3 x memref<64xf32>>
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%cur = %first) -> (index) {
        %next = dataflow.acquire_full %h : !dataflow.queue<3 x memref<64xf32>>
        dataflow.release_empty %h, %cur : !dataflow.queue<3 x memref<64xf32>>
        scf.yield %next : index
      }
      dataflow.release_empty %h, %last : !dataflow.queue<3 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<3 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@prod, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @b {kernel = @kernels::@cons, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}

// CHECK: dataflow.pipeline @p attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced on 1 queue(s)"}

// -----

// Groups that do not line up: the producer fills pairs, the consumer takes 3 a tile
// (`dataflow.reads`). Each end alone fits in 3 entries, both together need 4.
builtin.module {
  gpu.module @kernels {
    gpu.func @prod(%h: !dataflow.queue<3 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 3 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_empty %h : !dataflow.queue<3 x memref<64xf32>>
        %b = dataflow.acquire_empty %h : !dataflow.queue<3 x memref<64xf32>>
        dataflow.release_full %h, %a : !dataflow.queue<3 x memref<64xf32>>
        dataflow.release_full %h, %b : !dataflow.queue<3 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @cons(%h: !dataflow.queue<3 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 2 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_full %h : !dataflow.queue<3 x memref<64xf32>>
        %b = dataflow.acquire_full %h : !dataflow.queue<3 x memref<64xf32>>
        %c = dataflow.acquire_full %h : !dataflow.queue<3 x memref<64xf32>>
        dataflow.release_empty %h, %a : !dataflow.queue<3 x memref<64xf32>>
        dataflow.release_empty %h, %b : !dataflow.queue<3 x memref<64xf32>>
        dataflow.release_empty %h, %c : !dataflow.queue<3 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<3 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@prod, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 6 : i64}
    dataflow.stage @b {kernel = @kernels::@cons, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64, dataflow.reads = {h = 3 : i64}}
  }
}

// CHECK: verify_depth.mlir:{{[0-9]+}}:5: dataflow-verify: queue @h has 3 entries, but a worker of its producer @a holds up to 2 of its tickets at once and one of its consumer @b up to 3: it needs at least 4 (producer + consumer - 1)

// -----

// A consumer that keeps its first ticket while a loop takes and gives back 4 more holds 2
// entries at a time but spans 5 tickets: ticket 4 reuses the entry of ticket 0 (N = 4), which
// it holds. Counted in tickets, not in entries held.
builtin.module {
  gpu.module @kernels {
    gpu.func @prod(%h: !dataflow.queue<4 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 5 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_empty %h : !dataflow.queue<4 x memref<64xf32>>
        dataflow.release_full %h, %a : !dataflow.queue<4 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @cons(%h: !dataflow.queue<4 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 4 : index
      %first = dataflow.acquire_full %h : !dataflow.queue<4 x memref<64xf32>>
      scf.for %i = %c0 to %n step %c1 {
        %next = dataflow.acquire_full %h : !dataflow.queue<4 x memref<64xf32>>
        dataflow.release_empty %h, %next : !dataflow.queue<4 x memref<64xf32>>
      }
      dataflow.release_empty %h, %first : !dataflow.queue<4 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<4 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@prod, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 5 : i64}
    dataflow.stage @b {kernel = @kernels::@cons, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 5 : i64}
  }
}

// CHECK: dataflow-verify: queue @h has 4 entries, but a worker of its producer @a holds up to 1 of its tickets at once and one of its consumer @b up to 5: it needs at least 5

// -----

// The same, for as many iterations as a kernel argument says: no ring is deep enough.
builtin.module {
  gpu.module @kernels {
    gpu.func @prod(%h: !dataflow.queue<4 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 5 : index
      scf.for %i = %c0 to %n step %c1 {
        %a = dataflow.acquire_empty %h : !dataflow.queue<4 x memref<64xf32>>
        dataflow.release_full %h, %a : !dataflow.queue<4 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @cons(%h: !dataflow.queue<4 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %first = dataflow.acquire_full %h : !dataflow.queue<4 x memref<64xf32>>
      scf.for %i = %c0 to %n step %c1 {
        %next = dataflow.acquire_full %h : !dataflow.queue<4 x memref<64xf32>>
        dataflow.release_empty %h, %next : !dataflow.queue<4 x memref<64xf32>>
      }
      dataflow.release_empty %h, %first : !dataflow.queue<4 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @h : !dataflow.queue<4 x memref<64xf32>>
    dataflow.stage @a {kernel = @kernels::@prod, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [], outputs = [@h], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 5 : i64}
    dataflow.stage @b {kernel = @kernels::@cons, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@h], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 5 : i64}
  }
}

// CHECK: dataflow-verify: stage @b: 'scf.for' draws tickets of @h as many times as it runs while the worker holds one from before it: the tickets it spans have no bound
