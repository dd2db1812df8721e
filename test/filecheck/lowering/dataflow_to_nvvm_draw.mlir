// RUN: tilesync-opt %s -p 'convert-dataflow-to-nvvm{default_timeout_ns=5000 backoff_ns=16 debug=false}' | filecheck %s

// Drawing ahead: a worker draws the ticket of its next tile (`dataflow.draw_full` /
// `draw_empty`) while it works on the current one, and waits for it later (`at`). @src, the
// whole block a worker, draws its producer tickets ahead; @relay, two workers of 128 threads,
// its consumer tickets, and hands on the ticket it consumed. Each draws the next ticket only
// when it has another tile, the first only when it has a tile at all (a ticket drawn and never
// acquired would stall the queue).
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%x: !dataflow.queue<4 x memref<128xf32>>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {
        %first = dataflow.draw_empty %x : !dataflow.queue<4 x memref<128xf32>>
        scf.yield %first : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_empty %x at %d : !dataflow.queue<4 x memref<128xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_empty %x : !dataflow.queue<4 x memref<128xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        dataflow.release_full %x, %t : !dataflow.queue<4 x memref<128xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
    gpu.func @relay(%x: !dataflow.queue<4 x memref<128xf32>>, %y: !dataflow.queue<2 x memref<128xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %run = arith.cmpi ult, %c0, %n : index
      %d0 = scf.if %run -> (index) {
        %first = dataflow.draw_full %x threads 128 : !dataflow.queue<4 x memref<128xf32>>
        scf.yield %first : index
      } else {
        scf.yield %c0 : index
      }
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %x at %d threads 128 : !dataflow.queue<4 x memref<128xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_full %x threads 128 : !dataflow.queue<4 x memref<128xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        %u = dataflow.acquire_empty %y at %t threads 128 : !dataflow.queue<2 x memref<128xf32>>
        dataflow.release_empty %x, %t threads 128 : !dataflow.queue<4 x memref<128xf32>>
        dataflow.release_full %y, %u threads 128 : !dataflow.queue<2 x memref<128xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
    gpu.func @sink(%y: !dataflow.queue<2 x memref<128xf32>>) kernel {
      %t = dataflow.acquire_full %y : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %y, %t : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @ahead {
    dataflow.queue @x : !dataflow.queue<4 x memref<128xf32>>
    dataflow.queue @y : !dataflow.queue<2 x memref<128xf32>>
    dataflow.stage @src {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@x]}
    dataflow.stage @mid {kernel = @kernels::@relay, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@x], outputs = [@y]}
    dataflow.stage @end {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@y], outputs = []}
  }
}

// CHECK-LABEL: gpu.func @source
// The draw before the loop (where the worker has a tile): the leader's atom.add on the producer
// counter (offset 0), 0 in the other threads; nothing waits for it here.
// CHECK:         %[[D0:.*]] = scf.if %{{.*}} -> (index) {
// CHECK:           %[[DRAWN:.*]] = scf.if %{{.*}} -> (i64) {
// CHECK:             %[[T:.*]] = nvvm.atom add relaxed, gpu %{{.*}}, %{{.*}} : !llvm.ptr<1>, i64
// CHECK-NEXT:        scf.yield %[[T]] : i64
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-NEXT:        scf.yield %[[ZERO]] : i64
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[FIRST:.*]] = arith.index_cast %[[DRAWN]] : i64 to index
// CHECK-NEXT:      scf.yield %[[FIRST]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[D:.*]] = %[[D0]]) -> (index) {
// The acquire at the drawn ticket: the leader spins on its own value and hands it out through
// the acquire's shared word and the block's barrier (no atom.add of its own).
// CHECK-NEXT:      %[[MINE:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT:      %[[SLOT:.*]] = memref.get_global @__tilesync_queue_ticket_0
// CHECK-NOT:       nvvm.atom
// CHECK:           nvvm.ld acquire, gpu
// CHECK:           memref.store %[[MINE]], %[[SLOT]]
// CHECK-NEXT:    }
// CHECK-NEXT:    nvvm.barrier0
// CHECK-NEXT:    %[[HANDED:.*]] = memref.load %[[SLOT]]
// CHECK-NEXT:    %t = arith.index_cast %[[HANDED]] : i64 to index
// The next tile's draw, only when there is one; its release and the drawn ticket carried on.
// CHECK:         %[[NEXT:.*]] = scf.if %{{.*}} -> (index) {
// CHECK:           nvvm.atom add relaxed, gpu
// CHECK:           %drawn = arith.index_cast %{{.*}} : i64 to index
// CHECK-NEXT:      scf.yield %drawn : index
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %[[D]] : index
// CHECK-NEXT:    }
// CHECK:         nvvm.fence acq_rel, gpu
// CHECK:         scf.yield %[[NEXT]] : index

// CHECK-LABEL: gpu.func @relay
// The group's leader (tid.x mod 128 == 0) draws on the consumer counter (offset 128) ...
// CHECK:         %[[RANK:.*]] = arith.remui %{{.*}}, %{{.*}} : index
// CHECK:         scf.if %{{.*}} -> (i64) {
// CHECK:           llvm.getelementptr %{{.*}}[128] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i8
// CHECK-NEXT:      %{{.*}} = arith.constant 1 : i64
// CHECK-NEXT:      nvvm.atom add relaxed, gpu
// ... and the acquire at it hands it out through the group's word and named barrier.
// CHECK:         scf.for
// CHECK:           memref.get_global @__tilesync_queue_ticket_1 : memref<2xi64, 3 : i64>
// CHECK-NOT:       nvvm.atom
// CHECK:           nvvm.ld acquire, gpu
// CHECK:           nvvm.barrier.sync %{{.*}}, 128
// CHECK-NEXT:      memref.load
// The relay's acquire_empty at the consumed ticket stays as before: spin, then the barrier.
// CHECK:           nvvm.atom add relaxed, gpu
// CHECK:           nvvm.ld acquire, gpu
// CHECK:           nvvm.barrier.sync %{{.*}}, 128
// CHECK-NOT:       memref.load
// CHECK:           nvvm.fence acq_rel, gpu
