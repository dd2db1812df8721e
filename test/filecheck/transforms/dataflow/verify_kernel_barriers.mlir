// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s
// A queue operation meets its worker (the block, or with `threads N` each group of N
// consecutive threads) at a barrier: control flow that depends on the thread index and lets
// some of them pass it by leaves the worker waiting forever, holding its tickets. A branch on
// `thread_id.x <pred> constant` is allowed where each worker takes one side whole; the thread
// index divided by a multiple of the worker's size is one value a worker.

// A consumer whose queue operations only the first 64 of its 128 threads run: the block
// barrier around the acquire waits for the other 64 forever.
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
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %tid = gpu.thread_id x
      %few = arith.cmpi ult, %tid, %c64 : index
      scf.if %few {
        scf.for %i = %c0 to %c4 step %c1 {
          %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
          %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
          %x = memref.load %e[%c0] : memref<64xf32>
          dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
        }
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
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' waits for every thread of the block, but the branch on `thread_id.x ult 64` around it splits threads 0..127: those that do not take its side never arrive

// -----

// Two workers of 128 threads a CTA, whose branch on `thread_id.x < 64` splits the first worker:
// its barrier waits for threads 64..127 forever.
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
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %tid = gpu.thread_id x
      %few = arith.cmpi ult, %tid, %c64 : index
      scf.if %few {
        scf.for %i = %c0 to %c2 step %c1 {
          %t = dataflow.acquire_full %q threads 128 : !dataflow.queue<2 x memref<64xf32>>
          %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
          %x = memref.load %e[%c0] : memref<64xf32>
          dataflow.release_empty %q, %t threads 128 : !dataflow.queue<2 x memref<64xf32>>
        }
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
// CHECK: dataflow-verify: stage @d: 'dataflow.acquire_full' waits for each group of 128 threads, but the branch on `thread_id.x ult 64` around it splits threads 0..127: those that do not take its side never arrive

// -----

// Verified: each worker of 128 threads runs a loop whose bounds follow its index in the CTA
// (thread_id.x / 128: one value a worker), every thread of it alike.
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
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %tid = gpu.thread_id x
      %w = arith.divui %tid, %c128 : index
      scf.for %i = %w to %c4 step %c2 {
        %t = dataflow.acquire_full %q threads 128 : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %x = memref.load %e[%c0] : memref<64xf32>
        dataflow.release_empty %q, %t threads 128 : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @per_worker {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @per_worker attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced
