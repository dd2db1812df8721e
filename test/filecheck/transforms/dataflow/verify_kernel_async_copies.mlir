// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s
// A ticket goes back only once the asynchronous copies of its entry are complete on the path of
// the thread that issued them: a cp.async or bulk load reading the entry, or a bulk store
// writing it, still in flight at the release would be at the bytes of the entry's next round.
// A group copy is complete after a wait for at most N pending groups once N + 1 groups were
// committed from its own; a bulk load after a wait on the barrier element its bytes complete.
// Each program refused below keeps the tickets' discipline and uses its entry only while it
// holds the ticket (and fences the proxies where a bulk copy needs it:
// verify_kernel_proxy_fences_invalid.mlir), so the copy's completion is its only fault; the last
// ones are verified.

// A consumer copies its entry into shared memory (cp.async) and gives the ticket back without
// waiting: the producer may refill the entry while the copy still reads it.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.cp_async %w[%c0, %c0], %e[%c0] : memref<4x16xf32, 3>, memref<64xf32>
        tile.cp_async_commit
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @no_wait {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' gives back the ticket of @q while the asynchronous copy 'tile.cp_async' (at line {{[0-9]+}}) of its entry may still be in flight: the next round's worker would be at the same bytes (wait for it first: tile.cp_async_wait after its tile.cp_async_commit)

// -----

// A wait for no pending groups does not wait for a copy never committed to a group.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.cp_async %w[%c0, %c0], %e[%c0] : memref<4x16xf32, 3>, memref<64xf32>
        tile.cp_async_wait 0
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @uncommitted {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' gives back the ticket of @q while the asynchronous copy 'tile.cp_async' (at line {{[0-9]+}}) of its entry may still be in flight: the next round's worker would be at the same bytes (wait for it first: tile.cp_async_wait after its tile.cp_async_commit)

// -----

// A wait that leaves one group pending, right after the copy's own group: that one may be it.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.cp_async %w[%c0, %c0], %e[%c0] : memref<4x16xf32, 3>, memref<64xf32>
        tile.cp_async_commit
        tile.cp_async_wait 1
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @one_pending {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' gives back the ticket of @q while the asynchronous copy 'tile.cp_async' (at line {{[0-9]+}}) of its entry may still be in flight: the next round's worker would be at the same bytes (wait for it first: tile.cp_async_wait after its tile.cp_async_commit)

// -----

// The copy's thread waits only in a branch the others take: on the path of the thread that
// copied, nothing waited.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %tid = gpu.thread_id x
        %lead = arith.cmpi eq, %tid, %c0 : index
        scf.if %lead {
          tile.cp_async %w[%c0, %c0], %e[%c0] : memref<4x16xf32, 3>, memref<64xf32>
          tile.cp_async_commit
        } else {
          tile.cp_async_wait 0
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @other_branch {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' gives back the ticket of @q while the asynchronous copy 'tile.cp_async' (at line {{[0-9]+}}) of its entry may still be in flight: the next round's worker would be at the same bytes (wait for it first: tile.cp_async_wait after its tile.cp_async_commit)

// -----

// A pipelined copy loop (a chunk a k-step, two ahead) whose last chunks are waited for only by
// later iterations that need not run: `k + 1 < 16` guards the copy, and the wait keeps one
// group pending, so the copy of the last iteration that copies is still pending when the loop
// ends.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.cp_async %w[%c0, %c0], %e[%c0] : memref<4x16xf32, 3>, memref<64xf32>
        tile.cp_async_commit
        scf.for %k = %c0 to %c16 step %c1 {
          tile.cp_async_wait 1
          %n = arith.addi %k, %c1 : index
          %more = arith.cmpi ult, %n, %c16 : index
          scf.if %more {
            tile.cp_async %w[%c0, %c0], %e[%n] : memref<4x16xf32, 3>, memref<64xf32>
          }
          tile.cp_async_commit
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @short_guard {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' gives back the ticket of @q while the asynchronous copy 'tile.cp_async' (at line {{[0-9]+}}) of its entry may still be in flight: the next round's worker would be at the same bytes (wait for it first: tile.cp_async_wait after its tile.cp_async_commit)

// -----

// A producer's bulk store into its entry is waited for only until it has read its source
// (`tile.tma_store_wait 0`, without `writes`): its writes may land after the release.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.fence_proxy_async global
        tile.fence_proxy_async
        tile.bulk_store %e[%c0], %s[%c0] bytes 256 : memref<64xf32>, memref<64xf32, 3>
        tile.tma_store_commit
        tile.tma_store_wait 0
        tile.fence_proxy_async global
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
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
  dataflow.pipeline @store_read_only {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @s: 'dataflow.release_full' gives back the ticket of @q while the asynchronous copy 'tile.bulk_store' (at line {{[0-9]+}}) of its entry may still be in flight: the next round's worker would be at the same bytes (wait for it first: tile.tma_store_wait ... writes after its tile.tma_store_commit)

// -----

// A bulk load of the entry whose transaction barrier nobody waits on before the release.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.fence_proxy_async global
        tile.mbarrier_arrive %b[%c0] expect_tx 256 : memref<1xi64, 3>
        tile.bulk_load %s[%c0], %e[%c0], %b[%c0] bytes 256 : memref<64xf32, 3>, memref<64xf32>, memref<1xi64, 3>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @bulk_load_no_wait {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' gives back the ticket of @q while the asynchronous copy 'tile.bulk_load' (at line {{[0-9]+}}) of its entry may still be in flight: the next round's worker would be at the same bytes (wait for it first: a tile.mbarrier_wait on the barrier its bytes complete)

// -----

// The same at the NVVM level, a kernel written with nvvm ops: the copy from the entry's
// address is committed to a group nobody waits for.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %sp = llvm.mlir.zero : !llvm.ptr<3>
        %ea = "memref.extract_aligned_pointer_as_index"(%e) : (memref<64xf32>) -> index
        %ei = arith.index_cast %ea : index to i64
        %ep = llvm.inttoptr %ei : i64 to !llvm.ptr<1>
        nvvm.cp.async.shared.global %sp, %ep, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
        nvvm.cp.async.commit.group
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @nvvm_no_wait {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow-verify: stage @d: 'dataflow.release_empty' gives back the ticket of @q while the asynchronous copy 'nvvm.cp.async.shared.global' (at line {{[0-9]+}}) of its entry may still be in flight: the next round's worker would be at the same bytes (wait for it first: tile.cp_async_wait after its tile.cp_async_commit)

// -----

// Waited for at the NVVM level: verified.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %sp = llvm.mlir.zero : !llvm.ptr<3>
        %ea = "memref.extract_aligned_pointer_as_index"(%e) : (memref<64xf32>) -> index
        %ei = arith.index_cast %ea : index to i64
        %ep = llvm.inttoptr %ei : i64 to !llvm.ptr<1>
        nvvm.cp.async.shared.global %sp, %ep, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
        nvvm.cp.async.commit.group
        nvvm.cp.async.wait.group 0
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @nvvm_waited {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @nvvm_waited attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// The same copies, each complete before its ticket goes back. Verified: a cp.async committed
// and waited for,
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.cp_async %w[%c0, %c0], %e[%c0] : memref<4x16xf32, 3>, memref<64xf32>
        tile.cp_async_commit
        tile.cp_async_wait 0
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @waited {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @waited attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// a pipelined copy loop (two chunks ahead: a chunk copied under `k + 2 < 16`, the wait keeping
// one group pending; every copy of the loop is waited for by an iteration that runs),
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.cp_async %w[%c0, %c0], %e[%c0] : memref<4x16xf32, 3>, memref<64xf32>
        tile.cp_async_commit
        tile.cp_async %w[%c0, %c0], %e[%c1] : memref<4x16xf32, 3>, memref<64xf32>
        tile.cp_async_commit
        scf.for %k = %c0 to %c16 step %c1 {
          tile.cp_async_wait 1
          %n = arith.addi %k, %c2 : index
          %more = arith.cmpi ult, %n, %c16 : index
          scf.if %more {
            tile.cp_async %w[%c0, %c0], %e[%n] : memref<4x16xf32, 3>, memref<64xf32>
          }
          tile.cp_async_commit
        }
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @pipelined {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @pipelined attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// copies in every iteration of a loop, waited for after it,
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        scf.for %k = %c0 to %c16 step %c1 {
          tile.cp_async %w[%c0, %c0], %e[%k] : memref<4x16xf32, 3>, memref<64xf32>
          tile.cp_async_commit
        }
        tile.cp_async_wait 0
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @after_loop {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @after_loop attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// a producer's bulk store waited for with its writes,
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.fence_proxy_async global
        tile.fence_proxy_async
        tile.bulk_store %e[%c0], %s[%c0] bytes 256 : memref<64xf32>, memref<64xf32, 3>
        tile.tma_store_commit
        tile.tma_store_wait 0 writes
        tile.fence_proxy_async global
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
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
  dataflow.pipeline @store_written {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @store_written attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// and a bulk load whose barrier is waited on.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "tile", sym_visibility = "private", type = memref<4x16xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
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
      %c16 = arith.constant 16 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %w = memref.get_global @tile : memref<4x16xf32, 3>
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.fence_proxy_async global
        tile.mbarrier_arrive %b[%c0] expect_tx 256 : memref<1xi64, 3>
        tile.bulk_load %s[%c0], %e[%c0], %b[%c0] bytes 256 : memref<64xf32, 3>, memref<64xf32>, memref<1xi64, 3>
        %i64 = arith.index_cast %i : index to i64
        %parity = arith.trunci %i64 : i64 to i1
        tile.mbarrier_wait %b[%c0], %parity : memref<1xi64, 3>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @bulk_load_waited {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @bulk_load_waited attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced
