// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{debug=false},dataflow-persistent-kernel' | filecheck %s

// By default every stage keeps a branch of its own, also stages of one code but for constants
// (persistent_kernel_same_code.mlir's @double and @triple, which `share_code=true` runs in
// one): each stage's CTA range, count, scale and queue depths are constants of its own code,
// none chosen by CTA, so LLVM compiles each stage's loop for its own values.
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%q: !dataflow.queue<4 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<4 x memref<64xf32>>
      %e = dataflow.entry %q, %t : !dataflow.queue<4 x memref<64xf32>> -> memref<64xf32>
      %tid = gpu.thread_id x
      %one = arith.constant 1.0 : f32
      memref.store %one, %e[%tid] : memref<64xf32>
      dataflow.release_full %q, %t : !dataflow.queue<4 x memref<64xf32>>
      gpu.return
    }
    gpu.func @double(%in: !dataflow.queue<4 x memref<64xf32>>, %out: !dataflow.queue<6 x memref<64xf32>>, %w: memref<64xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
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
      gpu.return
    }
    gpu.func @triple(%in: !dataflow.queue<6 x memref<64xf32>>, %out: !dataflow.queue<4 x memref<64xf32>>, %w: memref<64xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
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
      gpu.return
    }
    gpu.func @sink(%q: !dataflow.queue<4 x memref<64xf32>>, %out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      %t = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xf32>>
      %e = dataflow.entry %q, %t : !dataflow.queue<4 x memref<64xf32>> -> memref<64xf32>
      %tid = gpu.thread_id x
      %v = memref.load %e[%tid] : memref<64xf32>
      memref.store %v, %out[%tid] : memref<?xf32>
      dataflow.release_empty %q, %t : !dataflow.queue<4 x memref<64xf32>>
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

// CHECK-LABEL: gpu.func @p_persistent(
// CHECK-NOT:     arith.select
// @double's branch: CTAs [2, 4), its count 2 and scale 2.0 constants.
// CHECK:         } else {
// CHECK-NEXT:      %[[END1:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %{{.*}} = arith.cmpi ult, %[[CTA:.*]], %[[END1]] : index
// CHECK-NEXT:      scf.if
// CHECK-NEXT:        %[[FIRST1:.*]] = arith.constant 2 : index
// CHECK-NEXT:        %{{.*}} = arith.subi %[[CTA]], %[[FIRST1]] : index
// CHECK-NEXT:        %{{.*}} = arith.constant 2 : index
// CHECK:             arith.constant 2.000000e+00 : f32
// @triple's branch: CTAs [4, 7), its count 3 and scale 3.0 constants.
// CHECK:           } else {
// CHECK-NEXT:        %[[END2:.*]] = arith.constant 7 : index
// CHECK-NEXT:        %{{.*}} = arith.cmpi ult, %[[CTA]], %[[END2]] : index
// CHECK-NEXT:        scf.if
// CHECK-NEXT:          %[[FIRST2:.*]] = arith.constant 4 : index
// CHECK-NEXT:          %{{.*}} = arith.subi %[[CTA]], %[[FIRST2]] : index
// CHECK-NEXT:          %{{.*}} = arith.constant 3 : index
// CHECK:               arith.constant 3.000000e+00 : f32
// CHECK:       dataflow.pipeline @p attributes {dataflow.persistent_kernel = @kernels::@p_persistent}
