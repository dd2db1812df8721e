// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{debug=false}' | filecheck %s

// A final-stage kernel that adds its 2 partials in a loop and releases both after it (tickets
// kept in a local array): the loop's acquire runs twice with no barrier after the threads'
// read of the shared ticket slot, so the leader's store of ticket k+1 races with slow
// threads still loading ticket k.
// The lowering meets the block at a barrier before each such acquire's leader writes the slot.
// A loop whose body also releases (a tile's usual acquire ... release) needs none: the
// release's barrier separates the two uses.
builtin.module {
  gpu.module @k {
    gpu.func @src(%q: !dataflow.queue<4 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = dataflow.acquire_empty %q : !dataflow.queue<4 x memref<128xf32>>
      dataflow.release_full %q, %t : !dataflow.queue<4 x memref<128xf32>>
      gpu.return
    }
    gpu.func @final(%q: !dataflow.queue<4 x memref<128xf32>>, %out: memref<128xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %held = memref.alloca() : memref<2xindex>
      %sum = scf.for %k = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
        %t = dataflow.acquire_full %q : !dataflow.queue<4 x memref<128xf32>>
        memref.store %t, %held[%k] : memref<2xindex>
        %e = dataflow.entry %q, %t : !dataflow.queue<4 x memref<128xf32>> -> memref<128xf32>
        %v = memref.load %e[%tid] : memref<128xf32>
        %a = arith.addf %acc, %v : f32
        scf.yield %a : f32
      }
      memref.store %sum, %out[%tid] : memref<128xf32>
      %t0 = memref.load %held[%c0] : memref<2xindex>
      %t1 = memref.load %held[%c1] : memref<2xindex>
      dataflow.release_empty %q, %t0 : !dataflow.queue<4 x memref<128xf32>>
      dataflow.release_empty %q, %t1 : !dataflow.queue<4 x memref<128xf32>>
      gpu.return
    }
    gpu.func @relay(%q: !dataflow.queue<4 x memref<128xf32>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.for %k = %c0 to %c2 step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<4 x memref<128xf32>>
        dataflow.release_empty %q, %t : !dataflow.queue<4 x memref<128xf32>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @red {
    dataflow.queue @q pin_l2 : !dataflow.queue<4 x memref<128xf32>>
    dataflow.stage @fanin {kernel = @k::@src, resource = #dataflow.resource<tensor>, ctas = 2 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
    dataflow.stage @final {kernel = @k::@final, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 1 : i64, dataflow.reads = {q = 2 : i64}}
    dataflow.stage @relay {kernel = @k::@relay, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 2 : i64}
  }
}

// CHECK-LABEL: gpu.func @final(
// CHECK:         scf.for
// CHECK:           nvvm.barrier0
// CHECK:           memref.store {{%.*}}, [[SLOT:%.*]][{{%.*}}] : memref<1xi64, 3 : i64>
// CHECK:           nvvm.barrier0
// CHECK-NEXT:      memref.load [[SLOT]]

// CHECK-LABEL: gpu.func @relay(
// CHECK:         scf.for
// CHECK-NOT:       nvvm.barrier0
// CHECK:           memref.store {{%.*}}, [[SLOT:%.*]][{{%.*}}] : memref<1xi64, 3 : i64>
// CHECK:           nvvm.barrier0
// CHECK-NEXT:      memref.load [[SLOT]]
