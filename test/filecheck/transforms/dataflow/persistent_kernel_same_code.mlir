// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{debug=false},dataflow-persistent-kernel{share_code=true}' | filecheck %s

// Stages whose lowered bodies are one code but for constants are emitted once: @double and
// @triple differ in their scale (2.0, 3.0), their queues' depths (4 and 6, the divisors of a
// ticket's entry and round) and the shared words that hand their tickets out. The persistent
// kernel runs them in one branch, CTAs [2, 7), choosing by CTA (b < 4: @double) the stage's
// first CTA and count, its parameters, its scale, and the quotient of each division by a depth
// (each divided by its own constant, not by a chosen register). Every stage takes the 6 tiles
// of a launch, its CTAs striding over them, so that each queue gives as many tickets as it
// takes (the compile route's dataflow-verify balances them).
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<4 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      %tiles = arith.constant 6 : index
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_empty %q : !dataflow.queue<4 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<4 x memref<64xf32>> -> memref<64xf32>
        %tid = gpu.thread_id x
        %one = arith.constant 1.0 : f32
        memref.store %one, %e[%tid] : memref<64xf32>
        dataflow.release_full %q, %t : !dataflow.queue<4 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @double(%in: !dataflow.queue<4 x memref<64xf32>>, %out: !dataflow.queue<6 x memref<64xf32>>, %w: memref<64xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      %tiles = arith.constant 6 : index
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_full %in : !dataflow.queue<4 x memref<64xf32>>
        %e = dataflow.entry %in, %t : !dataflow.queue<4 x memref<64xf32>> -> memref<64xf32>
        %u = dataflow.acquire_empty %out : !dataflow.queue<6 x memref<64xf32>>
        %f = dataflow.entry %out, %u : !dataflow.queue<6 x memref<64xf32>> -> memref<64xf32>
        %tid = gpu.thread_id x
        %v = memref.load %e[%tid] : memref<64xf32>
        %s = memref.load %w[%tid] : memref<64xf32>
        %k = arith.constant 2.0 : f32
        %x = arith.mulf %v, %k : f32
        %y = arith.addf %x, %s : f32
        memref.store %y, %f[%tid] : memref<64xf32>
        dataflow.release_full %out, %u : !dataflow.queue<6 x memref<64xf32>>
        dataflow.release_empty %in, %t : !dataflow.queue<4 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @triple(%in: !dataflow.queue<6 x memref<64xf32>>, %out: !dataflow.queue<4 x memref<64xf32>>, %w: memref<64xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      %tiles = arith.constant 6 : index
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_full %in : !dataflow.queue<6 x memref<64xf32>>
        %e = dataflow.entry %in, %t : !dataflow.queue<6 x memref<64xf32>> -> memref<64xf32>
        %u = dataflow.acquire_empty %out : !dataflow.queue<4 x memref<64xf32>>
        %f = dataflow.entry %out, %u : !dataflow.queue<4 x memref<64xf32>> -> memref<64xf32>
        %tid = gpu.thread_id x
        %v = memref.load %e[%tid] : memref<64xf32>
        %s = memref.load %w[%tid] : memref<64xf32>
        %k = arith.constant 3.0 : f32
        %x = arith.mulf %v, %k : f32
        %y = arith.addf %x, %s : f32
        memref.store %y, %f[%tid] : memref<64xf32>
        dataflow.release_full %out, %u : !dataflow.queue<4 x memref<64xf32>>
        dataflow.release_empty %in, %t : !dataflow.queue<6 x memref<64xf32>>
      }
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<4 x memref<64xf32>>, %out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      %tiles = arith.constant 6 : index
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32>>
        %e = dataflow.entry %q, %t : !dataflow.queue<4 x memref<64xf32>> -> memref<64xf32>
        %tid = gpu.thread_id x
        %v = memref.load %e[%tid] : memref<64xf32>
        memref.store %v, %out[%tid] : memref<?xf32>
        dataflow.release_empty %q, %t : !dataflow.queue<4 x memref<64xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @a : !dataflow.queue<4 x memref<64xf32>>
    dataflow.queue @b : !dataflow.queue<6 x memref<64xf32>>
    dataflow.queue @c : !dataflow.queue<4 x memref<64xf32>>
    dataflow.stage @make {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@a]}
    dataflow.stage @twice {kernel = @kernels::@double, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@a], outputs = [@b]}
    dataflow.stage @thrice {kernel = @kernels::@triple, resource = #dataflow.resource<simt>, ctas = 3 : i64, inputs = [@b], outputs = [@c]}
    dataflow.stage @take {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@c], outputs = []}
  }
}

// The stage kernels keep their signatures (the runtime binds by them), not their bodies.
// CHECK-LABEL: gpu.func @double(%{{.*}}: memref<64xf32>, %{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>) kernel attributes {{{.*}}tilesync.fused_into = @kernels::@p_persistent} {
// CHECK-NEXT:    gpu.return
// CHECK:       gpu.func @triple(%{{.*}}: memref<64xf32>, %{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>) kernel attributes {{{.*}}tilesync.fused_into = @kernels::@p_persistent} {
// CHECK-NEXT:    gpu.return
// CHECK:       gpu.func @p_persistent(%[[W2:.*]]: memref<64xf32>, %[[W3:.*]]: memref<64xf32>, %{{.*}}: memref<?xf32>, %[[A:.*]]: memref<?xi8>, %[[B:.*]]: memref<?xi8>, %[[C:.*]]: memref<?xi8>)
// CHECK-NEXT:    %[[CTA:.*]] = gpu.block_id x
// CHECK-NEXT:    %[[END0:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %{{.*}} = arith.cmpi ult, %[[CTA]], %[[END0]] : index
// CHECK:         } else {
// CHECK-NEXT:      %[[END2:.*]] = arith.constant 7 : index
// CHECK-NEXT:      %[[CLASS:.*]] = arith.cmpi ult, %[[CTA]], %[[END2]] : index
// CHECK-NEXT:      scf.if %[[CLASS]] {
// CHECK-NEXT:        %[[END1:.*]] = arith.constant 4 : index
// CHECK-NEXT:        %[[DOUBLE:.*]] = arith.cmpi ult, %[[CTA]], %[[END1]] : index
// CHECK-NEXT:        %[[F2:.*]] = arith.constant 2 : index
// CHECK-NEXT:        %[[F3:.*]] = arith.constant 4 : index
// CHECK-NEXT:        %[[FIRST:.*]] = arith.select %[[DOUBLE]], %[[F2]], %[[F3]] : index
// CHECK-NEXT:        %[[K2:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:        %[[K3:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:        %[[K:.*]] = arith.select %[[DOUBLE]], %[[K2]], %[[K3]] : f32
// CHECK-NEXT:        %[[LOCAL:.*]] = arith.subi %[[CTA]], %[[FIRST]] : index
// CHECK-NEXT:        %[[N2:.*]] = arith.constant 2 : index
// CHECK-NEXT:        %[[N3:.*]] = arith.constant 3 : index
// CHECK-NEXT:        %{{.*}} = arith.select %[[DOUBLE]], %[[N2]], %[[N3]] : index
// CHECK-NEXT:        %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:        %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:        %[[W:.*]] = arith.select %[[DOUBLE]], %[[W2]], %[[W3]] : memref<64xf32>
// CHECK-NEXT:        %[[IN:.*]] = arith.select %[[DOUBLE]], %[[A]], %[[B]] : memref<?xi8>
// CHECK-NEXT:        %[[OUT:.*]] = arith.select %[[DOUBLE]], %[[B]], %[[C]] : memref<?xi8>
// @triple's ticket words are @double's (a CTA runs one stage): no get_global of its own.
// CHECK:             %{{.*}} = memref.get_global @__tilesync_queue_ticket_1 : memref<1xi64, 3 : i64>
// CHECK-NOT:         @__tilesync_queue_ticket_{{[34]}}
// CHECK:             nvvm.atom add relaxed, gpu
// CHECK:             %[[D4:.*]] = arith.constant 4 : i64
// CHECK-NEXT:        %[[E4:.*]] = arith.remui %[[T:.*]], %[[D4]] : i64
// CHECK-NEXT:        %[[D6:.*]] = arith.constant 6 : i64
// CHECK-NEXT:        %[[E6:.*]] = arith.remui %[[T]], %[[D6]] : i64
// CHECK-NEXT:        %{{.*}} = arith.select %[[DOUBLE]], %[[E4]], %[[E6]] : i64
// CHECK:             memref.get_global @__tilesync_queue_ticket_2
// CHECK-NOT:         @__tilesync_queue_ticket_{{[34]}}
// CHECK:             memref.load %[[W]]
// CHECK-NEXT:        arith.mulf %{{.*}}, %[[K]] : f32
// CHECK:           } else {
// The sink, alone in its code, as before.
// CHECK-NEXT:        %{{.*}} = arith.constant 7 : index
// CHECK-NEXT:        %{{.*}} = arith.subi %[[CTA]], %{{.*}} : index
// CHECK-NEXT:        %{{.*}} = arith.constant 1 : index
// CHECK:       dataflow.pipeline @p attributes {dataflow.persistent_kernel = @kernels::@p_persistent}
