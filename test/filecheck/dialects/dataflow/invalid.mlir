// RUN: tilesync-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Each case is one mistake; the kernels are private declarations taking the stage's queues.

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @two_producers {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @c {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: queue @q must have exactly one producer stage, found @a, @b

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @no_consumer {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
}
// CHECK: queue @q has no consumer stage

// -----

func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @no_producer {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: queue @q must have exactly one producer stage, found none

// -----

func.func private @relay(!dataflow.queue<2 x tensor<64xf32>>, !dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @cycle {
  dataflow.queue @ab : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @ba : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@ba], outputs = [@ab]}
  dataflow.stage @b {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@ab], outputs = [@ba]}
}
// CHECK: stage graph has a cycle: @a -> @b -> @a

// -----

func.func private @relay(!dataflow.queue<2 x tensor<64xf32>>, !dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @self_loop {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = [@q]}
}
// CHECK: stage @a both produces and consumes queue @q

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @zero_max_ctas max_ctas(0) {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: max_ctas must be positive, got 0

// -----

func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>, !dataflow.queue<2 x tensor<64xf32>>)
func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @listed_twice {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q, @q], outputs = []}
}
// CHECK: stage @b lists queue @q twice in its inputs

// -----

dataflow.pipeline @empty {
}
// CHECK: pipeline @empty needs at least one stage

// -----

func.func private @produce(!dataflow.queue<0 x tensor<64xf32>>)
// CHECK: queue must have at least one entry, got 0

// -----

func.func private @produce(!dataflow.queue<2 x tensor<?xf32>>)
// CHECK: queue payload must have a static shape, got tensor<?xf32>

// -----

func.func private @produce(!dataflow.queue<2 x vector<4xf32>>)
// CHECK: queue payload must be a tensor or memref type

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @zero_ctas {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<tensor>, ctas = 0 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: stage @a must have a positive CTA count, got 0

// -----

// 100 + 200 CTAs cannot all be resident on 132 SMs x 2 blocks.
func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @too_many_ctas max_ctas(264) {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<tensor>, ctas = 100 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 200 : i64, inputs = [@q], outputs = []}
}
// CHECK: pipeline @too_many_ctas needs 300 co-resident CTAs but max_ctas is 264

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @bad_resource {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<tma>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: Expected `simt`, or `tensor`.

// -----

func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @unknown_queue {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@nope], outputs = []}
}
// CHECK: stage @b uses @nope, which is not a queue of pipeline @unknown_queue

// -----

func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @missing_kernel {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @kernels::@produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: stage @a: kernel @kernels::@produce not found

// -----

// The kernel's queue arguments must be the stage's inputs, then its outputs.
func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<4 x tensor<64xf32>>)
dataflow.pipeline @kernel_mismatch {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: stage @b: kernel @consume takes queues (!dataflow.queue<4 x tensor<64xf32>>) but the stage's inputs then outputs are (!dataflow.queue<2 x tensor<64xf32>>)

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @foreign_op {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
  %c = arith.constant 0 : index
}
// CHECK: 'dataflow.pipeline' may only hold 'dataflow.stage' and 'dataflow.queue', found 'arith.constant'

// -----

// A stage outside a pipeline.
func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = []}
// CHECK: 'dataflow.stage' expects parent op 'dataflow.pipeline'

// -----

func.func @entry_shape(%q: !dataflow.queue<2 x tensor<128x64xf16>>) {
  %slot = dataflow.acquire_full %q : !dataflow.queue<2 x tensor<128x64xf16>>
  %tile = dataflow.entry %q, %slot : !dataflow.queue<2 x tensor<128x64xf16>> -> memref<64x128xf16>
  func.return
}
// CHECK: entry buffer memref<64x128xf16> does not match the queue payload tensor<128x64xf16>

// -----

func.func @slot_not_index(%q: !dataflow.queue<2 x tensor<64xf32>>, %s: i32) {
  "dataflow.release_full"(%q, %s) : (!dataflow.queue<2 x tensor<64xf32>>, i32) -> ()
  func.return
}
// CHECK: operand 'slot' at position 1 does not verify

// -----

func.func @not_a_queue(%m: memref<64xf32>) {
  %slot = "dataflow.acquire_empty"(%m) : (memref<64xf32>) -> index
  func.return
}
// CHECK: operand 'queue' at position 0 does not verify

// -----

// A queue worker is whole warps: the group's named barrier counts warps.
func.func @threads_not_warps(%q: !dataflow.queue<2 x tensor<64xf32>>) {
  %slot = dataflow.acquire_full %q threads 48 : !dataflow.queue<2 x tensor<64xf32>>
  func.return
}
// CHECK: 'dataflow.acquire_full': threads must be whole warps (a multiple of 32 up to 1024), got 48

// -----

func.func @threads_zero(%q: !dataflow.queue<2 x tensor<64xf32>>, %t: index) {
  dataflow.release_empty %q, %t threads 0 : !dataflow.queue<2 x tensor<64xf32>>
  func.return
}
// CHECK: 'dataflow.release_empty': threads must be whole warps (a multiple of 32 up to 1024), got 0

// -----

// A drawn ticket is the worker leader's alone until an acquire takes it: nothing else may use it.
func.func @drawn_ticket_used(%q: !dataflow.queue<2 x tensor<64xf32>>) {
  %d = dataflow.draw_full %q : !dataflow.queue<2 x tensor<64xf32>>
  %e = dataflow.entry %q, %d : !dataflow.queue<2 x tensor<64xf32>> -> memref<64xf32>
  func.return
}
// CHECK: 'dataflow.draw_full': the drawn ticket is the worker leader's alone until a 'dataflow.acquire_full' on the same queue takes it (`at`) and hands it out, but it reaches 'dataflow.entry'

// -----

// ... also through the values a loop carries: here the wrong end of the queue takes it.
func.func @drawn_ticket_wrong_end(%q: !dataflow.queue<2 x tensor<64xf32>>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = dataflow.draw_empty %q : !dataflow.queue<2 x tensor<64xf32>>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
    %t = dataflow.acquire_full %q at %d : !dataflow.queue<2 x tensor<64xf32>>
    scf.yield %d : index
  }
  func.return
}
// CHECK: 'dataflow.draw_empty': the drawn ticket is the worker leader's alone until a 'dataflow.acquire_empty' on the same queue takes it (`at`) and hands it out, but it reaches 'dataflow.acquire_full'

// -----

// ... and on the same queue.
func.func @drawn_ticket_other_queue(%q: !dataflow.queue<2 x tensor<64xf32>>, %p: !dataflow.queue<2 x tensor<64xf32>>) {
  %d = dataflow.draw_full %q : !dataflow.queue<2 x tensor<64xf32>>
  %t = dataflow.acquire_full %p at %d : !dataflow.queue<2 x tensor<64xf32>>
  func.return
}
// CHECK: 'dataflow.draw_full': the drawn ticket is the worker leader's alone until a 'dataflow.acquire_full' on the same queue takes it (`at`) and hands it out, but it reaches 'dataflow.acquire_full'

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @pinned_cluster_queue {
  dataflow.queue @q pin_l2 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: queue @q is in distributed shared memory (`cluster`): it has no ring in global memory to pin in L2

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @relay(!dataflow.queue<2 x tensor<64xf32>>, !dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @mixed_placement {
  dataflow.queue @q cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @r : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = [@r]}
  dataflow.stage @c {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@r], outputs = []}
}
// CHECK: pipeline @mixed_placement runs in clusters, so every queue must be a cluster queue: @r is in global memory

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @uneven_clusters {
  dataflow.queue @q cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 8 : i64, inputs = [@q], outputs = []}
}
// CHECK: pipeline @uneven_clusters runs one CTA of each stage in a cluster, so its stages need equal CTA counts, got @a 4, @b 8

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @multicast_cluster_queue {
  dataflow.queue @q cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
  dataflow.stage @c {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: cluster queue @q has 2 consumer stages: a ring in one CTA's shared memory has one

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @marked_in_clusters cluster {
  dataflow.queue @q : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @a {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q]}
  dataflow.stage @b {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q], outputs = []}
}
// CHECK: pipeline @marked_in_clusters runs in clusters, so every queue must be a cluster queue: @q is in global memory

// -----

func.func private @produce(!dataflow.queue<2 x tensor<64xf32>>)
func.func private @relay(!dataflow.queue<2 x tensor<64xf32>>, !dataflow.queue<2 x tensor<64xf32>>)
func.func private @consume(!dataflow.queue<2 x tensor<64xf32>>)
dataflow.pipeline @too_many_stages {
  dataflow.queue @q0 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @q1 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @q2 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @q3 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @q4 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @q5 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @q6 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.queue @q7 cluster : !dataflow.queue<2 x tensor<64xf32>>
  dataflow.stage @s0 {kernel = @produce, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [], outputs = [@q0]}
  dataflow.stage @s1 {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q0], outputs = [@q1]}
  dataflow.stage @s2 {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q1], outputs = [@q2]}
  dataflow.stage @s3 {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q2], outputs = [@q3]}
  dataflow.stage @s4 {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q3], outputs = [@q4]}
  dataflow.stage @s5 {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q4], outputs = [@q5]}
  dataflow.stage @s6 {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q5], outputs = [@q6]}
  dataflow.stage @s7 {kernel = @relay, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q6], outputs = [@q7]}
  dataflow.stage @s8 {kernel = @consume, resource = #dataflow.resource<simt>, ctas = 4 : i64, inputs = [@q7], outputs = []}
}
// CHECK: pipeline @too_many_stages runs one CTA of each of its 9 stages in a cluster: at most 8 (the portable cluster size)
