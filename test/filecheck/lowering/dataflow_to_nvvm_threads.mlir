// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{default_timeout_ns=5000 backoff_ns=16 debug=false}' | filecheck %s

// Queue ops run by groups of threads (`threads N`): every group of N consecutive threads is a
// queue worker of its own. @source runs two workers per CTA (256 threads, groups of 128),
// @relay eight (512 threads, groups of 64), which relay the ticket they consumed.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%x: !dataflow.queue<4 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %t = dataflow.acquire_empty %x threads 128 : !dataflow.queue<4 x memref<128xf32>>
      %e = dataflow.entry %x, %t : !dataflow.queue<4 x memref<128xf32>> -> memref<128xf32>
      dataflow.release_full %x, %t threads 128 : !dataflow.queue<4 x memref<128xf32>>
      gpu.return
    }
    gpu.func @relay(%x: !dataflow.queue<4 x memref<128xf32>>, %y: !dataflow.queue<2 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 512, 1, 1>} {
      %t = dataflow.acquire_full %x threads 64 : !dataflow.queue<4 x memref<128xf32>>
      %u = dataflow.acquire_empty %y at %t threads 64 : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %x, %t threads 64 : !dataflow.queue<4 x memref<128xf32>>
      dataflow.release_full %y, %u threads 64 : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
    gpu.func @sink(%y: !dataflow.queue<2 x memref<128xf32>>) kernel {
      %t = dataflow.acquire_full %y : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %y, %t : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @groups {
    dataflow.queue @x : !dataflow.queue<4 x memref<128xf32>>
    dataflow.queue @y : !dataflow.queue<2 x memref<128xf32>>
    dataflow.stage @src {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@x]}
    dataflow.stage @mid {kernel = @kernels::@relay, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@x], outputs = [@y]}
    dataflow.stage @end {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@y], outputs = []}
  }
}

// An acquire hands its tickets out through one shared word per group: 8 for @relay's
// acquire_full, 2 for @source's acquire_empty, 1 for the block-wide @sink.
// CHECK:       "memref.global"() <{sym_name = "__tilesync_queue_ticket_2", type = memref<1xi64, 3 : i64>
// CHECK-NEXT:  "memref.global"() <{sym_name = "__tilesync_queue_ticket_1", type = memref<8xi64, 3 : i64>
// CHECK-NEXT:  "memref.global"() <{sym_name = "__tilesync_queue_ticket_0", type = memref<2xi64, 3 : i64>

// CHECK-LABEL: gpu.func @source
// CHECK-NEXT:    %[[SLOT:.*]] = memref.get_global @__tilesync_queue_ticket_0 : memref<2xi64, 3 : i64>
// The thread's group k = tid.x / 128 is its word of the slot ...
// CHECK-NEXT:    %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[N:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[K:.*]] = arith.divui %[[TID]], %[[N]] : index
// ... and the group's first thread (tid.x mod 128 == 0) leads: it draws the ticket and spins.
// CHECK-NEXT:    %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[N:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[RANK:.*]] = arith.remui %[[TID]], %[[N]] : index
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[LEADER:.*]] = arith.cmpi eq, %[[RANK]], %[[ZERO]] : index
// CHECK-NEXT:    scf.if %[[LEADER]] {
// CHECK:           %[[T:.*]] = nvvm.atom add relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64
// CHECK:           scf.while
// CHECK:             nvvm.ld acquire, gpu
// CHECK:           memref.store %[[T]], %[[SLOT]][%[[K]]] : memref<2xi64, 3 : i64>
// CHECK-NEXT:    }
// The group's named barrier: id 3 + tid.x / 128, 128 threads; then every thread of the group
// reads the group's ticket.
// CHECK-NEXT:    %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[N:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[G:.*]] = arith.divui %[[TID]], %[[N]] : index
// CHECK-NEXT:    %[[G32:.*]] = arith.index_cast %[[G]] : index to i32
// CHECK-NEXT:    %[[BASE:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[ID:.*]] = arith.addi %[[G32]], %[[BASE]] : i32
// CHECK-NEXT:    nvvm.barrier.sync %[[ID]], 128
// CHECK-NEXT:    %{{.*}} = memref.load %[[SLOT]][%[[K]]] : memref<2xi64, 3 : i64>
// release_full: the group's barrier, then the release of the fill by the group's thread 32
// (its second warp's first: its fence stalls another warp than the next acquire's leader).
// CHECK:         %e = builtin.unrealized_conversion_cast
// CHECK:         %[[ID:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    nvvm.barrier.sync %[[ID]], 128
// CHECK-NEXT:    %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[N:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[RANK:.*]] = arith.remui %[[TID]], %[[N]] : index
// CHECK-NEXT:    %[[R:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[LEADER:.*]] = arith.cmpi eq, %[[RANK]], %[[R]] : index
// CHECK-NEXT:    scf.if %[[LEADER]] {
// CHECK:           nvvm.fence acq_rel, gpu
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:      nvvm.red add relaxed, gpu %{{.*}}, %[[ONE]] : !llvm.ptr<1>, i32
// CHECK-NOT:     nvvm.barrier0
// CHECK:         gpu.return

// Groups of 64: eight words, barriers 3 + tid.x / 64 of 64 threads; the relay's acquire at the
// consumed ticket spins in the group's leader (no atomic) and ends with the group's barrier.
// CHECK-LABEL: gpu.func @relay
// CHECK-NEXT:    %[[SLOT:.*]] = memref.get_global @__tilesync_queue_ticket_1 : memref<8xi64, 3 : i64>
// CHECK-NEXT:    %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[N:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[K:.*]] = arith.divui %[[TID]], %[[N]] : index
// CHECK:         arith.remui %{{.*}}, %{{.*}} : index
// CHECK:         memref.store %{{.*}}, %[[SLOT]][%[[K]]] : memref<8xi64, 3 : i64>
// CHECK:         arith.constant 64 : index
// CHECK:         arith.constant 3 : i32
// CHECK:         nvvm.barrier.sync %{{.*}}, 64
// CHECK-NEXT:    memref.load %[[SLOT]][%[[K]]] : memref<8xi64, 3 : i64>
// CHECK:         %[[RANK:.*]] = arith.remui %{{.*}}, %{{.*}} : index
// CHECK:         scf.if
// CHECK-NOT:       nvvm.atom
// CHECK:           nvvm.ld acquire, gpu
// CHECK:         nvvm.barrier.sync %{{.*}}, 64
// CHECK:         nvvm.barrier.sync %{{.*}}, 64
// CHECK:         nvvm.red add relaxed, gpu
// CHECK:         nvvm.barrier.sync %{{.*}}, 64
// CHECK:         nvvm.red add relaxed, gpu
// CHECK-NOT:     nvvm.barrier0
// CHECK:         gpu.return

// Without `threads` the block is the worker, as before: thread 0 leads, `bar.sync 0`.
// CHECK-LABEL: gpu.func @sink
// CHECK-NOT:     nvvm.barrier.sync
// CHECK:         nvvm.barrier0
// CHECK-NOT:     nvvm.barrier.sync
// CHECK:         nvvm.barrier0
// CHECK:         gpu.return
