// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{default_timeout_ns=5000 backoff_ns=16 debug=false}' | filecheck %s
// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{default_timeout_ns=5000}' | filecheck %s --check-prefix=DEBUG

// @x multicasts to two consumer stages (@left relays to @y with the ticket it consumed, @right
// ends there). Rings: @x has a header of 3 lines (producer + 2 consumer counters), entries of
// 128 + 1024 bytes; @y has 2 header lines.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%x: !dataflow.queue<4 x memref<256xf32>>, %n: index) kernel {
      %t = dataflow.acquire_empty %x : !dataflow.queue<4 x memref<256xf32>>
      %e = dataflow.entry %x, %t : !dataflow.queue<4 x memref<256xf32>> -> memref<256xf32>
      %tid = gpu.thread_id x
      %v = arith.constant 1.0 : f32
      memref.store %v, %e[%tid] : memref<256xf32>
      dataflow.release_full %x, %t : !dataflow.queue<4 x memref<256xf32>>
      gpu.return
    }
    gpu.func @left(%x: !dataflow.queue<4 x memref<256xf32>>, %y: !dataflow.queue<2 x memref<256xf32>>) kernel {
      %t = dataflow.acquire_full %x : !dataflow.queue<4 x memref<256xf32>>
      %u = dataflow.acquire_empty %y at %t : !dataflow.queue<2 x memref<256xf32>>
      dataflow.release_empty %x, %t : !dataflow.queue<4 x memref<256xf32>>
      dataflow.release_full %y, %u : !dataflow.queue<2 x memref<256xf32>>
      gpu.return
    }
    gpu.func @right(%x: !dataflow.queue<4 x memref<256xf32>>) kernel {
      %t = dataflow.acquire_full %x : !dataflow.queue<4 x memref<256xf32>>
      dataflow.release_empty %x, %t : !dataflow.queue<4 x memref<256xf32>>
      gpu.return
    }
    gpu.func @sink(%y: !dataflow.queue<2 x memref<256xf32>>) kernel {
      %t = dataflow.acquire_full %y : !dataflow.queue<2 x memref<256xf32>>
      dataflow.release_empty %y, %t : !dataflow.queue<2 x memref<256xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @fan {
    dataflow.queue @x pin_l2 : !dataflow.queue<4 x memref<256xf32>>
    dataflow.queue @y : !dataflow.queue<2 x memref<256xf32>>
    dataflow.stage @src {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@x]}
    dataflow.stage @l {kernel = @kernels::@left, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@x], outputs = [@y]}
    dataflow.stage @r {kernel = @kernels::@right, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@x], outputs = []}
    dataflow.stage @s {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@y], outputs = []}
  }
}

// The queue arguments become trailing ring parameters the runtime binds by role.
// CHECK-LABEL: gpu.func @source(%n: index, %[[RING:.*]]: memref<?xi8>) kernel attributes {sync.args = ["queue:@x"]}
// The leader draws the producer ticket (line 0), waits until both consumer stages released the
// entry's previous round (empty word at +64 >= round * 2, compared modulo 2^32) ...
// CHECK:         scf.if
// CHECK:           %[[COUNTER:.*]] = llvm.getelementptr %{{.*}}[0] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
// CHECK:           %[[T:.*]] = nvvm.atom add relaxed, gpu %[[COUNTER]], %{{.*}} : !llvm.ptr<1>, i64
// CHECK:           %[[N:.*]] = arith.constant 4 : i64
// CHECK-NEXT:      %[[E:.*]] = arith.remui %[[T]], %[[N]] : i64
// CHECK-NEXT:      %[[R64:.*]] = arith.divui %[[T]], %[[N]] : i64
// CHECK-NEXT:      %[[R:.*]] = arith.trunci %[[R64]] : i64 to i32
// CHECK-NEXT:      %[[STRIDE:.*]] = arith.constant 1152 : i64
// CHECK-NEXT:      %{{.*}} = arith.muli %[[E]], %[[STRIDE]] : i64
// CHECK-NEXT:      %[[HEADER:.*]] = arith.constant 384 : i64
// CHECK:           %[[META:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT:      %[[EMPTY:.*]] = llvm.getelementptr %[[META]][64] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
// CHECK-NEXT:      %[[C:.*]] = arith.constant 2 : i32
// CHECK-NEXT:      %[[TARGET:.*]] = arith.muli %[[R]], %[[C]] : i32
// CHECK:           scf.while
// CHECK-NEXT:        %[[SEEN:.*]] = nvvm.ld acquire, gpu %[[EMPTY]] : !llvm.ptr<1> -> i32
// CHECK-NEXT:        %[[AHEAD:.*]] = arith.subi %[[SEEN]], %[[TARGET]] : i32
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT:        arith.cmpi slt, %[[AHEAD]], %[[ZERO]] : i32
// CHECK:             arith.constant 5000 : i64
// CHECK:             nvvm.trap
// CHECK:             arith.constant 16 : i32
// CHECK-NEXT:        nvvm.nanosleep
// ... and hands the ticket to the block through shared memory.
// CHECK:           memref.store %[[T]], %[[SLOT:.*]][%{{.*}}] : memref<1xi64, 3 : i64>
// CHECK:         nvvm.barrier0
// CHECK-NEXT:    %{{.*}} = memref.load %[[SLOT]]
// The entry's payload follows its metadata line.
// CHECK:         %[[PAYLOAD:.*]] = llvm.getelementptr %{{.*}}[128] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
// CHECK-NEXT:    %e = builtin.unrealized_conversion_cast %[[PAYLOAD]] : !llvm.ptr<1> to memref<256xf32>
// release_full: a barrier, then the leader's release of one fill on the entry's full word.
// CHECK:         memref.store %v, %e[%tid]
// CHECK:         nvvm.barrier0
// CHECK:         scf.if
// CHECK:           %[[FULL:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-NEXT:      nvvm.fence acq_rel, gpu
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:      nvvm.red add relaxed, gpu %[[FULL]], %[[ONE]] : !llvm.ptr<1>, i32
// CHECK:         gpu.return

// Consumer stage 0 of @x draws from line 1 and waits for fill round + 1; its relay into @y
// takes the same ticket (no atomic) and waits on @y's empty word (one consumer stage).
// CHECK-LABEL: gpu.func @left(%{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>) kernel attributes {sync.args = ["queue:@x", "queue:@y"]}
// CHECK:         llvm.getelementptr %{{.*}}[128] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
// CHECK-NEXT:    arith.constant 1 : i64
// CHECK-NEXT:    %[[T:.*]] = nvvm.atom add relaxed, gpu
// CHECK:         arith.constant 1 : i32
// CHECK-NEXT:    arith.addi %{{.*}}, %{{.*}} : i32
// CHECK:         nvvm.barrier0
// CHECK-NEXT:    %[[GOT:.*]] = memref.load
// CHECK-NEXT:    %t = arith.index_cast %[[GOT]] : i64 to index
// CHECK-NEXT:    %[[T64:.*]] = arith.index_cast %t : index to i64
// CHECK:         scf.if
// CHECK-NOT:       nvvm.atom
// CHECK:           arith.remui %[[T64]], %{{.*}} : i64
// CHECK:           nvvm.ld acquire, gpu
// CHECK:         nvvm.barrier0
// CHECK-NEXT:    arith.index_cast %t : index to i64
// CHECK-NEXT:    nvvm.barrier0
// Releasing @x counts this stage's release on the empty word (+64); filling @y its full word.
// CHECK:         llvm.getelementptr %{{.*}}[64] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
// CHECK-NEXT:    nvvm.fence acq_rel, gpu
// CHECK:         nvvm.red add relaxed, gpu
// CHECK:         nvvm.fence acq_rel, gpu
// CHECK:         nvvm.red add relaxed, gpu
// CHECK:         gpu.return

// Consumer stage 1 of @x draws from line 2.
// CHECK-LABEL: gpu.func @right
// CHECK:         llvm.getelementptr %{{.*}}[256] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
// CHECK-NEXT:    arith.constant 1 : i64
// CHECK-NEXT:    nvvm.atom add relaxed, gpu

// The pipeline itself stays for the runtime.
// CHECK:       dataflow.pipeline @fan
// CHECK-NOT:   dataflow.acquire
// CHECK-NOT:   dataflow.entry

// With debug (the default) a timed-out spin records kernel, the queue's parameter (0), the
// ticket, the block and the site (1: waiting for a free entry), then marks the record complete
// (its last word, after a fence) before trapping.
// DEBUG-LABEL: gpu.func @source(%n: index, %{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi32>) kernel attributes {sync.args = ["queue:@x", "debug_record"]}
// DEBUG:         %[[PARAM:.*]] = arith.constant 1 : i32
// DEBUG:         %[[SITE:.*]] = arith.constant 1 : i32
// DEBUG:         nvvm.atom.cas relaxed, sys %{{.*}}, %{{.*}}, %[[ONE:[^ ]*]] :
// DEBUG:         %[[P:.*]] = llvm.getelementptr %{{.*}}[2] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
// DEBUG-NEXT:    nvvm.st volatile %[[P]], %[[PARAM]]
// DEBUG:         %[[S:.*]] = llvm.getelementptr %{{.*}}[9] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
// DEBUG-NEXT:    nvvm.st volatile %[[S]], %[[SITE]]
// DEBUG-NEXT:    nvvm.fence sc, sys
// DEBUG-NEXT:    %[[C:.*]] = llvm.getelementptr %{{.*}}[10] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
// DEBUG-NEXT:    nvvm.st volatile %[[C]], %[[ONE]]
// DEBUG-NEXT:    nvvm.fence sc, sys
// DEBUG-NEXT:  } else {
// DEBUG:         nvvm.ld volatile
// DEBUG:         nvvm.trap
// DEBUG-LABEL: gpu.func @sink
// DEBUG:         arith.constant 2 : i32
