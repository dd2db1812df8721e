// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s
// Waits of several workers (block, cluster and mbarrier barriers) while a worker holds a
// ticket or has drawn one; programs from a third audit, each verified before.
// Two workers a CTA (threads 64 of 128) on a one-entry queue: a worker that has drawn its
// next ticket waits at a block barrier before it acquires it; the other worker's next ticket
// needs the entry the drawn one will fill and free. A drawn ticket is held like an acquired
// one at a wait of several workers.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cT = arith.constant 4 : index
      scf.for %i = %c0 to %cT step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %true = arith.constant true
      %t = dataflow.acquire_full %q threads 64 : !dataflow.queue<1 x memref<64xf32>>
      dataflow.release_empty %q, %t threads 64 : !dataflow.queue<1 x memref<64xf32>>
      scf.if %true {
        %d = dataflow.draw_full %q threads 64 : !dataflow.queue<1 x memref<64xf32>>
        gpu.barrier
        %u = dataflow.acquire_full %q at %d threads 64 : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_empty %q, %u threads 64 : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'gpu.barrier' makes threads of more than one worker (128 of the block's, a worker being 64) wait for each other while a worker has drawn a ticket of @q it has not acquired yet

// -----

// One worker a CTA, two CTAs a cluster: a cluster barrier while holding a ticket of a
// one-entry queue waits for the other CTA, which waits for the entry.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cT = arith.constant 2 : index
      scf.for %i = %c0 to %cT step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, tilesync.cluster_dims = array<i32: 2, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %true = arith.constant true
      %t = dataflow.acquire_full %q : !dataflow.queue<1 x memref<64xf32>>
      tile.cluster_barrier
      dataflow.release_empty %q, %t : !dataflow.queue<1 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'tile.cluster_barrier' makes threads of more than one worker (256 of the cluster's, a worker being 128) wait for each other while a worker holds a ticket of @q

// -----

// The same with the barrier's two halves written out: the wait is the cluster's.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cT = arith.constant 2 : index
      scf.for %i = %c0 to %cT step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, tilesync.cluster_dims = array<i32: 2, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %true = arith.constant true
      %t = dataflow.acquire_full %q : !dataflow.queue<1 x memref<64xf32>>
      nvvm.cluster.arrive
      nvvm.cluster.wait
      dataflow.release_empty %q, %t : !dataflow.queue<1 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'nvvm.cluster.wait' makes threads of more than one worker (256 of the cluster's, a worker being 128) wait for each other while a worker holds a ticket of @q

// -----

// A cluster wait with two workers a CTA and no cluster: the block's threads.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cT = arith.constant 2 : index
      scf.for %i = %c0 to %cT step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %true = arith.constant true
      %t = dataflow.acquire_full %q threads 64 : !dataflow.queue<1 x memref<64xf32>>
      nvvm.cluster.arrive
      nvvm.cluster.wait
      dataflow.release_empty %q, %t threads 64 : !dataflow.queue<1 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'nvvm.cluster.wait' makes threads of more than one worker (128 of the block's, a worker being 64) wait for each other while a worker holds a ticket of @q

// -----

// A wait on an mbarrier whose arrivals may come from the other worker of the CTA.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cT = arith.constant 2 : index
      scf.for %i = %c0 to %cT step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %true = arith.constant true
      %bars = memref.alloca() : memref<1xi64, 3>
      %false = arith.constant false
      tile.mbarrier_init %bars[%c0] count 128 : memref<1xi64, 3>
      gpu.barrier
      %t = dataflow.acquire_full %q threads 64 : !dataflow.queue<1 x memref<64xf32>>
      tile.mbarrier_arrive %bars[%c0] : memref<1xi64, 3>
      tile.mbarrier_wait %bars[%c0], %false : memref<1xi64, 3>
      dataflow.release_empty %q, %t threads 64 : !dataflow.queue<1 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'tile.mbarrier_wait' makes threads of more than one worker (128 of the block's, a worker being 64) wait for each other while a worker holds a ticket of @q

// -----

// A relay in a loop that carries its acquired input ticket to the next iteration and gives
// its output `at` it: not a ticket drawn ahead. Proved.
builtin.module {
  gpu.module @k {
    gpu.func @p(%a: !dataflow.queue<3 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c4_i = arith.constant 4 : index
      %c0_i = arith.constant 0 : index
      %c5_i = arith.constant 5 : index
      %c1_i = arith.constant 1 : index
      %bid1 = gpu.block_id x
      %gd2 = gpu.grid_dim x
      scf.for %i3 = %c0_i to %c5_i step %c1_i {
        %v4 = arith.muli %i3, %gd2 : index
        %v5 = arith.addi %v4, %bid1 : index
        %b6 = arith.cmpi ult, %v5, %c4_i : index
        scf.if %b6 {
          scf.for %i7 = %c0_i to %c1_i step %c1_i {
            %t8 = dataflow.acquire_empty %a : !dataflow.queue<3 x memref<64xf32>>
            dataflow.release_full %a, %t8 : !dataflow.queue<3 x memref<64xf32>>
          }
        }
      }
      gpu.return
    }
    gpu.func @r(%a: !dataflow.queue<3 x memref<64xf32>>, %b: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c4_i = arith.constant 4 : index
      %c1_i = arith.constant 1 : index
      %bid1 = gpu.block_id x
      %b2 = arith.cmpi ult, %bid1, %c4_i : index
      scf.if %b2 {
        %t3 = dataflow.acquire_full %a : !dataflow.queue<3 x memref<64xf32>>
        %v4 = arith.addi %bid1, %c1_i : index
        %last7 = scf.for %i5 = %v4 to %c4_i step %c1_i iter_args(%cur6 = %t3) -> (index) {
          %t8 = dataflow.acquire_full %a : !dataflow.queue<3 x memref<64xf32>>
          %t9 = dataflow.acquire_empty %b at %cur6 : !dataflow.queue<1 x memref<64xf32>>
          dataflow.release_full %b, %t9 : !dataflow.queue<1 x memref<64xf32>>
          dataflow.release_empty %a, %cur6 : !dataflow.queue<3 x memref<64xf32>>
          scf.yield %t8 : index
        }
        %t10 = dataflow.acquire_empty %b at %last7 : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %b, %t10 : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_empty %a, %last7 : !dataflow.queue<3 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @c(%b: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c4_i = arith.constant 4 : index
      %c0_i = arith.constant 0 : index
      %bid1 = gpu.block_id x
      %gd2 = gpu.grid_dim x
      %b3 = arith.cmpi ult, %bid1, %c4_i : index
      %d4 = scf.if %b3 -> (index) {
        %d5 = dataflow.draw_full %b : !dataflow.queue<1 x memref<64xf32>>
        scf.yield %d5 : index
      } else {
        scf.yield %c0_i : index
      }
      %last8 = scf.for %i6 = %bid1 to %c4_i step %gd2 iter_args(%dc7 = %d4) -> (index) {
        %t9 = dataflow.acquire_full %b at %dc7 : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_empty %b, %t9 : !dataflow.queue<1 x memref<64xf32>>
        %v10 = arith.addi %i6, %gd2 : index
        %b11 = arith.cmpi slt, %v10, %c4_i : index
        %d12 = scf.if %b11 -> (index) {
          %d13 = dataflow.draw_full %b : !dataflow.queue<1 x memref<64xf32>>
          scf.yield %d13 : index
        } else {
          scf.yield %c0_i : index
        }
        scf.yield %d12 : index
      }
      gpu.return
    }
  }
  dataflow.pipeline @pipe {
    dataflow.queue @a pin_l2 : !dataflow.queue<3 x memref<64xf32>>
    dataflow.queue @b pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @P {kernel = @k::@p, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@a], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @R {kernel = @k::@r, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@a], outputs = [@b], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @C {kernel = @k::@c, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@b], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @{{.*}} attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// An intrinsic call between acquire and release with two workers a CTA: what it waits for
// (here the block barrier) cannot be seen, so it counts as the block's (a fourth audit's).
builtin.module {
  gpu.module @k {
    llvm.func @ext_sync()
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cT = arith.constant 4 : index
      scf.for %i = %c0 to %cT step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c0i32 = arith.constant 0 : i32
      %true = arith.constant true
      %bars = llvm.mlir.zero : !llvm.ptr<3>
      %tid = gpu.thread_id x
      %g = arith.divui %tid, %c2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        %t = dataflow.acquire_full %q threads 64 : !dataflow.queue<1 x memref<64xf32>>
        llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
        dataflow.release_empty %q, %t threads 64 : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'llvm.call_intrinsic' makes threads of more than one worker (128 of the block's, a worker being 64) wait for each other while a worker holds a ticket of @q

// -----

// Inline assembly likewise.
builtin.module {
  gpu.module @k {
    llvm.func @ext_sync()
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cT = arith.constant 4 : index
      scf.for %i = %c0 to %cT step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c0i32 = arith.constant 0 : i32
      %true = arith.constant true
      %bars = llvm.mlir.zero : !llvm.ptr<3>
      %tid = gpu.thread_id x
      %g = arith.divui %tid, %c2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        %t = dataflow.acquire_full %q threads 64 : !dataflow.queue<1 x memref<64xf32>>
        llvm.inline_asm has_side_effects "bar.sync 0;", "" : () -> ()
        dataflow.release_empty %q, %t threads 64 : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'llvm.inline_asm' makes threads of more than one worker (128 of the block's, a worker being 64) wait for each other while a worker holds a ticket of @q

// -----

// A warpgroup-aligned wgmma wait with two 64-thread workers in one warpgroup: its 128 threads
// execute it together.
builtin.module {
  gpu.module @k {
    llvm.func @ext_sync()
    gpu.func @src(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cT = arith.constant 4 : index
      scf.for %i = %c0 to %cT step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<1 x memref<64xf32>>
        dataflow.release_full %q, %t : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<1 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c0i32 = arith.constant 0 : i32
      %true = arith.constant true
      %bars = llvm.mlir.zero : !llvm.ptr<3>
      %tid = gpu.thread_id x
      %g = arith.divui %tid, %c2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        %t = dataflow.acquire_full %q threads 64 : !dataflow.queue<1 x memref<64xf32>>
        nvvm.wgmma.wait.group.sync.aligned 0
        dataflow.release_empty %q, %t threads 64 : !dataflow.queue<1 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q pin_l2 : !dataflow.queue<1 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'nvvm.wgmma.wait.group.sync.aligned' makes threads of more than one worker (128 of the block's, a worker being 64) wait for each other while a worker holds a ticket of @q
