// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s
// A bulk copy of a queue entry runs in the async proxy, which the queue's generic acquire and
// release do not order (dataflow-verify's proxy rule): a `tile.fence_proxy_async global` after
// the acquire and before the copy (of an entry read or written), and one after a bulk write's
// completion and before the release. Each program refused below keeps the tickets' discipline
// and completes its copies before the release (verify_kernel_async_copies.mlir), so the fence
// is its only fault; verify_kernel_proxy_fences.mlir has the fenced programs.

// A producer stores its entry with a bulk copy right after acquire_empty, fencing only its
// shared-memory writes (the fence without `global`): the copy is not ordered after the
// consumers' releases of the entry's previous round, and may overwrite what they still read.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %s = memref.get_global @buf : memref<64xf32, 3>
      %tid = gpu.thread_id x
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
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
      %c4 = arith.constant 4 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
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
  dataflow.pipeline @write_after_acquire {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: verify_kernel_proxy_fences_invalid.mlir:[[# @LINE - 33]]:9: dataflow-verify: stage @s: 'tile.bulk_store' writes the entry of a ticket of @q in the async proxy with no tile.fence_proxy_async global since the 'dataflow.acquire_empty' (at line {{[0-9]+}}) that takes it: the generic acquire does not order the async proxy, so the copy may write before the accesses the acquire waited for (the entry's previous round) are done (put a tile.fence_proxy_async global between the acquire and the copy, in the thread issuing the copy)

// -----

// Its bulk store is complete (`writes`) but not fenced before release_full: the generic release
// does not publish the async proxy's writes, and the consumer may read the previous round.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %s = memref.get_global @buf : memref<64xf32, 3>
      %tid = gpu.thread_id x
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.fence_proxy_async global
        tile.fence_proxy_async
        tile.bulk_store %e[%c0], %s[%c0] bytes 256 : memref<64xf32>, memref<64xf32, 3>
        tile.tma_store_commit
        tile.tma_store_wait 0 writes
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
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
  dataflow.pipeline @release_after_write {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: verify_kernel_proxy_fences_invalid.mlir:[[# @LINE - 29]]:9: dataflow-verify: stage @s: 'dataflow.release_full' gives back the ticket of @q after the bulk write 'tile.bulk_store' (at line {{[0-9]+}}) of its entry completed, with no tile.fence_proxy_async global since: the generic release does not publish the async proxy's writes, so the entry's next holder may see its previous bytes (put a tile.fence_proxy_async global after the tile.tma_store_wait ... writes, in the thread that issued the copy, before the release)

// -----

// A fence before the completion does not count: the writes it must order are not complete
// yet (the fence goes after `tile.tma_store_wait ... writes`).
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %s = memref.get_global @buf : memref<64xf32, 3>
      %tid = gpu.thread_id x
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.fence_proxy_async global
        tile.fence_proxy_async
        tile.bulk_store %e[%c0], %s[%c0] bytes 256 : memref<64xf32>, memref<64xf32, 3>
        tile.tma_store_commit
        tile.fence_proxy_async global
        tile.tma_store_wait 0 writes
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
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
  dataflow.pipeline @fence_before_completion {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: verify_kernel_proxy_fences_invalid.mlir:[[# @LINE - 29]]:9: dataflow-verify: stage @s: 'dataflow.release_full' gives back the ticket of @q after the bulk write 'tile.bulk_store' (at line {{[0-9]+}}) of its entry completed, with no tile.fence_proxy_async global since: the generic release does not publish the async proxy's writes, so the entry's next holder may see its previous bytes (put a tile.fence_proxy_async global after the tile.tma_store_wait ... writes, in the thread that issued the copy, before the release)

// -----

// A consumer's bulk load of its entry with no fence after acquire_full: the generic acquire
// does not order it, and it may read the entry's previous round.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %s = memref.get_global @buf : memref<64xf32, 3>
      %tid = gpu.thread_id x
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
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.mbarrier_arrive %b[%c0] expect_tx 256 : memref<1xi64, 3>
        tile.bulk_load %s[%c0], %e[%c0], %b[%c0] bytes 256 : memref<64xf32, 3>, memref<64xf32>, memref<1xi64, 3>
        %i64 = arith.index_cast %i : index to i64
        %parity = arith.trunci %i64 : i64 to i1
        tile.mbarrier_wait %b[%c0], %parity : memref<1xi64, 3>
        %x = memref.load %s[%c0] : memref<64xf32, 3>
        memref.store %x, %out[%i] : memref<4xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @read_after_acquire {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: verify_kernel_proxy_fences_invalid.mlir:[[# @LINE - 17]]:9: dataflow-verify: stage @d: 'tile.bulk_load' reads the entry of a ticket of @q in the async proxy with no tile.fence_proxy_async global since the 'dataflow.acquire_full' (at line {{[0-9]+}}) that takes it: the generic acquire does not order the async proxy, so the copy may read the bytes the entry held before the acquire (put a tile.fence_proxy_async global between the acquire and the copy, in the thread issuing the copy)

// -----

// A fence in the iteration, but before its acquire: it orders nothing after the acquire.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %s = memref.get_global @buf : memref<64xf32, 3>
      %tid = gpu.thread_id x
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
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
      scf.for %i = %c0 to %c4 step %c1 {
        tile.fence_proxy_async global
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        tile.mbarrier_arrive %b[%c0] expect_tx 256 : memref<1xi64, 3>
        tile.bulk_load %s[%c0], %e[%c0], %b[%c0] bytes 256 : memref<64xf32, 3>, memref<64xf32>, memref<1xi64, 3>
        %i64 = arith.index_cast %i : index to i64
        %parity = arith.trunci %i64 : i64 to i1
        tile.mbarrier_wait %b[%c0], %parity : memref<1xi64, 3>
        %x = memref.load %s[%c0] : memref<64xf32, 3>
        memref.store %x, %out[%i] : memref<4xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @fence_before_acquire {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: verify_kernel_proxy_fences_invalid.mlir:[[# @LINE - 17]]:9: dataflow-verify: stage @d: 'tile.bulk_load' reads the entry of a ticket of @q in the async proxy with no tile.fence_proxy_async global since the 'dataflow.acquire_full' (at line {{[0-9]+}}) that takes it: the generic acquire does not order the async proxy, so the copy may read the bytes the entry held before the acquire (put a tile.fence_proxy_async global between the acquire and the copy, in the thread issuing the copy)

// -----

// A fence in the first iteration only: the later ones' loads follow their acquires unfenced.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %s = memref.get_global @buf : memref<64xf32, 3>
      %tid = gpu.thread_id x
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
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        %first = arith.cmpi eq, %i, %c0 : index
        scf.if %first {
          tile.fence_proxy_async global
          scf.yield
        }
        tile.mbarrier_arrive %b[%c0] expect_tx 256 : memref<1xi64, 3>
        tile.bulk_load %s[%c0], %e[%c0], %b[%c0] bytes 256 : memref<64xf32, 3>, memref<64xf32>, memref<1xi64, 3>
        %i64 = arith.index_cast %i : index to i64
        %parity = arith.trunci %i64 : i64 to i1
        tile.mbarrier_wait %b[%c0], %parity : memref<1xi64, 3>
        %x = memref.load %s[%c0] : memref<64xf32, 3>
        memref.store %x, %out[%i] : memref<4xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @fence_first_iteration {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: verify_kernel_proxy_fences_invalid.mlir:[[# @LINE - 17]]:9: dataflow-verify: stage @d: 'tile.bulk_load' reads the entry of a ticket of @q in the async proxy with no tile.fence_proxy_async global since the 'dataflow.acquire_full' (at line {{[0-9]+}}) that takes it: the generic acquire does not order the async proxy, so the copy may read the bytes the entry held before the acquire (put a tile.fence_proxy_async global between the acquire and the copy, in the thread issuing the copy)

// -----

// The same at the NVVM level: a bulk store from the entry's address, waited for, with a
// fence of shared memory only (nvvm's fence.proxy.async of global or of all state spaces
// counts) before release_full.
builtin.module {
  gpu.module @k {
    "memref.global"() {sym_name = "buf", sym_visibility = "private", type = memref<64xf32, 3>, initial_value, alignment = 128 : i64} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
    gpu.func @src(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %v = arith.constant 1.0 : f32
      %s = memref.get_global @buf : memref<64xf32, 3>
      %tid = gpu.thread_id x
      scf.for %i = %c0 to %c4 step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
        nvvm.fence.proxy.async global
        %ea = "memref.extract_aligned_pointer_as_index"(%e) : (memref<64xf32>) -> index
        %ei = arith.index_cast %ea : index to i64
        %ep = llvm.inttoptr %ei : i64 to !llvm.ptr<1>
        %sp = llvm.mlir.zero : !llvm.ptr<3>
        %n = arith.constant 256 : i32
        nvvm.cp.async.bulk.global.shared %ep, %sp, %n : !llvm.ptr<1>, !llvm.ptr<3>
        nvvm.cp.async.bulk.commit.group
        nvvm.cp.async.bulk.wait.group 0
        nvvm.fence.proxy.async "shared::cta"
        dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @dst(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %s = memref.get_global @buf : memref<64xf32, 3>
      %b = memref.get_global @bars : memref<1xi64, 3>
      %tid = gpu.thread_id x
      tile.mbarrier_init %b[%c0] count 1 : memref<1xi64, 3>
      gpu.barrier
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
  dataflow.pipeline @nvvm_release_after_write {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: verify_kernel_proxy_fences_invalid.mlir:[[# @LINE - 29]]:9: dataflow-verify: stage @s: 'dataflow.release_full' gives back the ticket of @q after the bulk write 'nvvm.cp.async.bulk.global.shared' (at line {{[0-9]+}}) of its entry completed, with no tile.fence_proxy_async global since: the generic release does not publish the async proxy's writes, so the entry's next holder may see its previous bytes (put a tile.fence_proxy_async global after the tile.tma_store_wait ... writes, in the thread that issued the copy, before the release)
