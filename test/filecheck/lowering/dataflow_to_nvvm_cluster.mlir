// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{default_timeout_ns=5000 debug=false}' | filecheck %s
// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{default_timeout_ns=5000 debug=false cluster_arrivals=warp}' | filecheck %s --check-prefix=WARP

// A cluster queue: one ring of 2 entries per cluster in the consumer's shared memory (the
// array __tilesync_cluster_queue_q: full barriers at 0, empty at 16, the entries of 256 bytes
// from 128). Every thread takes every ticket of its end, in order, from a private counter;
// a barrier's phase completes on the peer CTA's one arrival (with cluster_arrivals=warp, on
// each of its 2 warps').
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xi32, 0 : i64>> -> memref<64xi32, 0 : i64>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<2 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xi32, 0 : i64>> -> memref<64xi32, 0 : i64>
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
      gpu.return
    }
  }
  dataflow.pipeline @pairs {
    dataflow.queue @q cluster : !dataflow.queue<2 x memref<64xi32, 0 : i64>>
    dataflow.stage @src {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @dst {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
  }
}

// CHECK:       "memref.global"() <{sym_name = "__tilesync_cluster_queue_q", type = memref<640xi8, 3 : i64>, initial_value, sym_visibility = "private", alignment = 128 : i64}> {tilesync.dynamic_shared}

// The producer: its leader initializes its empty barriers, then the cluster meets.
// CHECK:       gpu.func @source() kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>, dataflow.cluster_queues = ["q"]}
// CHECK:         llvm.getelementptr %{{.*}}[16] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:         nvvm.mbarrier.init %{{.*}}, %[[ONE]]
// CHECK:         nvvm.mbarrier.init %{{.*}}, %[[ONE]]
// WARP:          %[[WARPS:.*]] = arith.constant 2 : i32
// WARP:          nvvm.mbarrier.init %{{.*}}, %[[WARPS]]
// CHECK-NEXT:    nvvm.fence.mbarrier_init
// CHECK-NEXT:  }
// CHECK-NEXT:  nvvm.cluster.arrive
// CHECK-NEXT:  nvvm.cluster.wait
// CHECK-NEXT:  %[[COUNTER:.*]] = memref.alloca() : memref<1xi64, 5 : i64>

// acquire_empty: the thread takes its next ticket t and from round 1 on waits, acquiring at
// cluster scope, for parity (t div 2 - 1) of its CTA's empty[t mod 2]; no CTA barrier.
// CHECK:       %[[T:.*]] = memref.load %[[COUNTER]][%{{.*}}] : memref<1xi64, 5 : i64>
// CHECK:       memref.store %{{.*}}, %[[COUNTER]][%{{.*}}] : memref<1xi64, 5 : i64>
// CHECK:       %[[ROUND:.*]] = arith.divui %[[T]], %{{.*}} : i64
// CHECK:       %[[LATER:.*]] = arith.cmpi ugt, %[[ROUND]], %{{.*}} : i64
// CHECK-NEXT:  scf.if %[[LATER]] {
// CHECK:         arith.subi %[[ROUND]], %{{.*}} : i64
// CHECK:         nvvm.mbarrier.try_wait.parity %{{.*}}, %{{.*}} acquire_cluster : !llvm.ptr<3>
// CHECK:             nvvm.trap
// CHECK-NOT:   nvvm.barrier0
// CHECK:       %t = arith.index_cast %[[T]] : i64 to index

// entry: byte 128 + 256 (t mod 2) of the array, in the consumer (rank 1), by generic address.
// CHECK:       arith.constant 256 : i64
// CHECK:       arith.constant 128 : i64
// CHECK:       %[[LOCAL:.*]] = llvm.getelementptr
// CHECK-NEXT:  %[[RANK:.*]] = arith.constant 1 : i32
// CHECK-NEXT:  %[[PEER:.*]] = nvvm.mapa %[[LOCAL]], %[[RANK]] : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT:  %[[GENERIC:.*]] = llvmx.addrspacecast %[[PEER]] : !llvm.ptr<7> to !llvm.ptr
// CHECK-NEXT:  %e = builtin.unrealized_conversion_cast %[[GENERIC]] : !llvm.ptr to memref<64xi32, 0 : i64>

// release_full: the CTA meets, then its first thread arrives on the consumer's full[t mod 2]
// (with cluster_arrivals=warp: each warp meets, then its first lane arrives).
// CHECK:       nvvm.barrier0
// CHECK:       scf.if
// WARP:        %[[ALL:.*]] = arith.constant -1 : i32
// WARP-NEXT:   nvvm.bar.warp.sync %[[ALL]] : i32
// WARP:        arith.remui %{{.*}}, %{{.*}} : index
// WARP:        nvvm.mbarrier.arrive %{{.*}} cta %{{.*}} release_cluster
// CHECK:         nvvm.mbarrier.arrive %{{.*}} cta %{{.*}} release_cluster : !llvm.ptr<3>
// CHECK:       nvvm.cluster.arrive
// CHECK-NEXT:  nvvm.cluster.wait
// CHECK-NEXT:  gpu.return

// The consumer: its full barriers at 0; every thread waits for parity t div 2 of its CTA's
// full[t mod 2] in every round, reads its own entry (its shared address made generic), and
// gives the entry back on the producer's (rank 0) empty barrier.
// CHECK:       gpu.func @sink() kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>, dataflow.cluster_queues = ["q"]}
// CHECK:         llvm.getelementptr %{{.*}}[0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK:         nvvm.mbarrier.init
// CHECK:       nvvm.cluster.wait
// CHECK-NOT:   arith.cmpi ugt
// CHECK:       nvvm.mbarrier.try_wait.parity %{{.*}}, %{{.*}} acquire_cluster : !llvm.ptr<3>
// CHECK:       %[[OWN:.*]] = llvmx.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr
// CHECK-NEXT:  %e = builtin.unrealized_conversion_cast %[[OWN]] : !llvm.ptr to memref<64xi32, 0 : i64>
// CHECK:       nvvm.barrier0
// CHECK:       %[[PRODUCER:.*]] = arith.constant 0 : i32
// CHECK-NEXT:  nvvm.mbarrier.arrive %{{.*}} cta %[[PRODUCER]] release_cluster : !llvm.ptr<3>
// CHECK:       nvvm.cluster.arrive
// CHECK-NEXT:  nvvm.cluster.wait
// CHECK-NEXT:  gpu.return
