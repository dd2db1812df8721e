// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{debug=false},dataflow-persistent-kernel' | filecheck %s

// Two stages of one block size become one kernel: CTAs [0, 3) produce, [3, 5) consume, each
// seeing its own CTA index and count; the ring of @q is one parameter of the fused kernel.
builtin.module {
  gpu.module @kernels {
    gpu.func @producer(%q: !dataflow.queue<2 x memref<64xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<2 x memref<64xf32>>
      %e = dataflow.entry %q, %t : !dataflow.queue<2 x memref<64xf32>> -> memref<64xf32>
      %b = gpu.block_id x
      %g = gpu.grid_dim x
      %v = arith.index_cast %b : index to i32
      %w = arith.sitofp %v : i32 to f32
      %tid = gpu.thread_id x
      memref.store %w, %e[%tid] : memref<64xf32>
      dataflow.release_full %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
    gpu.func @consumer(%q: !dataflow.queue<2 x memref<64xf32>>, %out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<2 x memref<64xf32>>
      %b = gpu.block_id x
      dataflow.release_empty %q, %t : !dataflow.queue<2 x memref<64xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @make {kernel = @kernels::@producer, resource = #dataflow.resource<simt>, ctas = 3 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @take {kernel = @kernels::@consumer, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@q], outputs = []}
  }
}

// The stage kernels keep their parameters and attributes (the runtime binds a stage's arguments
// by them) but not their bodies, which the persistent kernel now holds: no pass after this one
// compiles them twice.
// CHECK-LABEL: gpu.func @producer(%{{.*}}: index, %{{.*}}: memref<?xi8>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>, sync.args = ["queue:@q"], tilesync.fused_into = @kernels::@p_persistent} {
// CHECK-NEXT:    gpu.return
// CHECK-NEXT:  }
// CHECK-NEXT:  gpu.func @consumer(%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xi8>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>, sync.args = ["queue:@q"], tilesync.fused_into = @kernels::@p_persistent} {
// CHECK-NEXT:    gpu.return
// CHECK-NEXT:  }
// CHECK-NEXT:  gpu.func @p_persistent(%{{.*}}: index, %{{.*}}: memref<?xf32>, %[[RING:.*]]: memref<?xi8>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>, sync.args = ["queue:@q"]}
// CHECK-NEXT:    %[[CTA:.*]] = gpu.block_id x
// CHECK-NEXT:    %[[END:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[MAKE:.*]] = arith.cmpi ult, %[[CTA]], %[[END]] : index
// CHECK-NEXT:    scf.if %[[MAKE]] {
// CHECK-NEXT:      %[[FIRST:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[LOCAL:.*]] = arith.subi %[[CTA]], %[[FIRST]] : index
// CHECK-NEXT:      %{{.*}} = arith.constant 3 : index
// CHECK:           nvvm.atom add relaxed, gpu
// CHECK:           arith.index_cast %[[LOCAL]] : index to i32
// CHECK:         } else {
// CHECK-NEXT:      %[[FIRST2:.*]] = arith.constant 3 : index
// CHECK-NEXT:      %[[LOCAL2:.*]] = arith.subi %[[CTA]], %[[FIRST2]] : index
// CHECK-NEXT:      %{{.*}} = arith.constant 2 : index
// CHECK-NOT:       gpu.block_id
// CHECK:           nvvm.ld acquire, gpu
// CHECK-NOT:       gpu.block_id
// CHECK:         gpu.return
// CHECK:       dataflow.pipeline @p attributes {dataflow.persistent_kernel = @kernels::@p_persistent}
