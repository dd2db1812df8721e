// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s
// The fences dataflow-verify asks of a kernel that moves queue entries with bulk copies (the
// async proxy) are enough: a `tile.fence_proxy_async global` after the acquire and before the
// copies, and after a bulk write's completion before the release; none before the release of
// an entry read by a bulk load (verify_kernel_proxy_fences_invalid.mlir has the refusals).

// The queue bench's bulk transport (kernels/queue_bench.py): the lead thread fences after the
// acquire and copies, the producer fences again after its store's writes are complete; the
// consumer's load, complete on its barrier, needs no fence before release_empty (its reads
// returned their bytes: nothing written after the release can change them).
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
        gpu.barrier
        %lead = arith.cmpi eq, %tid, %c0 : index
        scf.if %lead {
          tile.fence_proxy_async global
          tile.bulk_store %e[%c0], %s[%c0] bytes 256 : memref<64xf32>, memref<64xf32, 3>
          tile.tma_store_commit
          tile.tma_store_wait 0 writes
          tile.fence_proxy_async global
          scf.yield
        }
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
        %lead = arith.cmpi eq, %tid, %c0 : index
        scf.if %lead {
          tile.fence_proxy_async global
          tile.mbarrier_arrive %b[%c0] expect_tx 256 : memref<1xi64, 3>
          tile.bulk_load %s[%c0], %e[%c0], %b[%c0] bytes 256 : memref<64xf32, 3>, memref<64xf32>, memref<1xi64, 3>
          scf.yield
        }
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
  dataflow.pipeline @bench {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @bench attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// One fence after the acquire orders every bulk copy after it (two halves of the entry, a
// loop of loads), and one after the completion of both stores publishes them.
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
        %c32 = arith.constant 32 : index
        tile.bulk_store %e[%c0], %s[%c0] bytes 128 : memref<64xf32>, memref<64xf32, 3>
        tile.bulk_store %e[%c32], %s[%c32] bytes 128 : memref<64xf32>, memref<64xf32, 3>
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
        tile.fence_proxy_async global
        tile.mbarrier_arrive %b[%c0] expect_tx 256 : memref<1xi64, 3>
        %c2 = arith.constant 2 : index
        %c32 = arith.constant 32 : index
        scf.for %h = %c0 to %c2 step %c1 {
          %o = arith.muli %h, %c32 : index
          tile.bulk_load %s[%o], %e[%o], %b[%c0] bytes 128 : memref<64xf32, 3>, memref<64xf32>, memref<1xi64, 3>
        }
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
  dataflow.pipeline @two_copies {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @two_copies attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced

// -----

// At the NVVM level: nvvm.fence.proxy.async global after the acquire and after the wait.
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
        nvvm.fence.proxy.async global
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
  dataflow.pipeline @nvvm_fenced {
    dataflow.queue @q pin_l2 : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @s {kernel = @k::@src, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
    dataflow.stage @d {kernel = @k::@dst, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 1024 : i64, tiles = 4 : i64}
  }
}
// CHECK: dataflow.pipeline @nvvm_fenced attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced
