// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{debug=false},dataflow-persistent-kernel' | filecheck %s

// A pipeline in clusters becomes one kernel launched in clusters of one CTA a stage (2 CTAs
// along x): CTA b has rank b mod 2 in cluster b div 2, so it runs stage b mod 2 as that
// stage's CTA b div 2, its index numbered as the CTA ranges number it (rank x 4 + cluster).
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

// CHECK:      gpu.func @pairs_persistent() kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>, tilesync.cluster_dims = array<i32: 2, 1, 1>} {
// CHECK-NEXT:   %[[B:.*]] = gpu.block_id x
// CHECK-NEXT:   %[[SIZE:.*]] = arith.constant 2 : index
// CHECK-NEXT:   %[[LANES:.*]] = arith.constant 4 : index
// CHECK-NEXT:   %[[RANK:.*]] = arith.remui %[[B]], %[[SIZE]] : index
// CHECK-NEXT:   %[[CLUSTER:.*]] = arith.divui %[[B]], %[[SIZE]] : index
// CHECK-NEXT:   %[[FIRST:.*]] = arith.muli %[[RANK]], %[[LANES]] : index
// CHECK-NEXT:   %[[CTA:.*]] = arith.addi %[[FIRST]], %[[CLUSTER]] : index
// CHECK-NEXT:   %[[END:.*]] = arith.constant 4 : index
// CHECK-NEXT:   %[[SOURCE:.*]] = arith.cmpi ult, %[[CTA]], %[[END]] : index
// CHECK-NEXT:   scf.if %[[SOURCE]] {
// CHECK-NEXT:     %[[OFFSET:.*]] = arith.constant 0 : index
// CHECK-NEXT:     arith.subi %[[CTA]], %[[OFFSET]] : index
// CHECK:          nvvm.mbarrier.arrive %{{.*}} cta %{{.*}} release_cluster
// CHECK:          nvvm.cluster.arrive
// CHECK-NEXT:     nvvm.cluster.wait
// CHECK:        } else {
// CHECK-NEXT:     %[[OFFSET2:.*]] = arith.constant 4 : index
// CHECK-NEXT:     arith.subi %[[CTA]], %[[OFFSET2]] : index
// CHECK:          nvvm.mbarrier.try_wait.parity %{{.*}}, %{{.*}} acquire_cluster
// CHECK:          nvvm.cluster.arrive
// CHECK-NEXT:     nvvm.cluster.wait
// CHECK:      dataflow.pipeline @pairs attributes {dataflow.persistent_kernel = @kernels::@pairs_persistent}
