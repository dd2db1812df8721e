// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' | filecheck %s

// A pipeline in clusters: CTA c of @fill and CTA c of @drain share cluster c and its ring of
// @q. A CTA waits only for its cluster's other CTA, which the hardware starts with it, so one
// cluster must fit, not the 132 CTAs; each cluster's producer fills as many tickets a launch
// (16) as its consumer takes.
builtin.module {
  gpu.module @kernels {
    gpu.func @fill(%q: !dataflow.queue<4 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %count = arith.constant 16 : index
      scf.for %i = %c0 to %count step %c1 {
        %t = dataflow.acquire_empty %q : !dataflow.queue<4 x memref<64xi32, 0 : i64>>
        dataflow.release_full %q, %t : !dataflow.queue<4 x memref<64xi32, 0 : i64>>
      }
      gpu.return
    }
    gpu.func @drain(%q: !dataflow.queue<4 x memref<64xi32, 0 : i64>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %cta = gpu.block_id x
      %half = arith.constant 66 : index
      %low = arith.cmpi ult, %cta, %half : index
      %many = arith.constant 16 : index
      %few = arith.constant 16 : index
      %count = arith.select %low, %many, %few : index
      scf.for %i = %c0 to %count step %c1 {
        %t = dataflow.acquire_full %q : !dataflow.queue<4 x memref<64xi32, 0 : i64>>
        dataflow.release_empty %q, %t : !dataflow.queue<4 x memref<64xi32, 0 : i64>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @pairs {
    dataflow.queue @q cluster : !dataflow.queue<4 x memref<64xi32, 0 : i64>>
    dataflow.stage @fill {kernel = @kernels::@fill, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [], outputs = [@q], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 1056 : i64}
    dataflow.stage @drain {kernel = @kernels::@drain, resource = #dataflow.resource<simt>, ctas = 66 : i64, inputs = [@q], outputs = [], registers = 32 : i64, shared_bytes = 2048 : i64, tiles = 1056 : i64}
  }
}

// CHECK: dataflow.pipeline @pairs attributes {dataflow.verified = "co-resident: each cluster's 2 blocks start together (16 blocks per SM, at most 8 a cluster); clusters wait on no other; tickets balanced on 1 queue(s), in every cluster"}

// The stages' totals balance (1056 tickets) but the clusters do not: the first 33 consumer
// CTAs take 32 tickets, the others none, so cluster 0's consumer waits forever for 16 its
// producer never fills.
// RUN: sed -e 's/arith.constant 66 : index/arith.constant 33 : index/' -e 's/%many = arith.constant 16/%many = arith.constant 32/' -e 's/%few = arith.constant 16/%few = arith.constant 0/' %s | tilesync-opt -p 'dataflow-verify{sms=132}' --verify-diagnostics | filecheck %s --check-prefix=LANES
// LANES: dataflow-verify: cluster queue @q: in cluster 0, stage @fill fills 16 ticket(s) a launch but @drain takes 32: a launch would wait forever for 16

// A cluster queue's end is one worker a CTA: `threads` is refused before any lowering.
// RUN: sed -e 's/dataflow.acquire_full %q :/dataflow.acquire_full %q threads 64 :/' %s | tilesync-opt -p 'dataflow-verify{sms=132}' --verify-diagnostics | filecheck %s --check-prefix=THREADS
// THREADS: dataflow-verify: stage @drain: 'dataflow.acquire_full': cluster queue @q has one worker a CTA at each end (no `threads`)
