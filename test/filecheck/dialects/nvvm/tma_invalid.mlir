// RUN: tilesync-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @mbarrier_global(%b: !llvm.ptr<1>, %i: i32) {
  nvvm.mbarrier.init %b, %i : !llvm.ptr<1>
  func.return
}
// CHECK: 'nvvm.mbarrier.init' barrier must be in shared memory (!llvm.ptr<3>), got !llvm.ptr<1>

// -----

func.func @wait_global(%b: !llvm.ptr, %i: i32) {
  %0 = nvvm.mbarrier.try_wait.parity %b, %i : !llvm.ptr
  func.return
}
// CHECK: 'nvvm.mbarrier.try_wait.parity' barrier must be in shared memory (!llvm.ptr<3>), got !llvm.ptr

// -----

func.func @tma_global_destination(%g: !llvm.ptr<1>, %b: !llvm.ptr<3>, %map: !llvm.ptr, %i: i32) {
  nvvm.cp.async.bulk.tensor.shared.global %g, %map[%i], %b : !llvm.ptr<1>, !llvm.ptr, !llvm.ptr<3>
  func.return
}
// CHECK: 'nvvm.cp.async.bulk.tensor.shared.global' destination must be in shared memory (!llvm.ptr<3>), got !llvm.ptr<1>

// -----

func.func @tma_map_in_global(%s: !llvm.ptr<3>, %map: !llvm.ptr<1>, %i: i32) {
  nvvm.cp.async.bulk.tensor.shared.global %s, %map[%i], %s : !llvm.ptr<3>, !llvm.ptr<1>, !llvm.ptr<3>
  func.return
}
// CHECK: 'nvvm.cp.async.bulk.tensor.shared.global' takes the tensor map by its generic address (!llvm.ptr), got !llvm.ptr<1>

// -----

func.func @tma_rank(%s: !llvm.ptr<3>, %map: !llvm.ptr, %i: i32) {
  nvvm.cp.async.bulk.tensor.global.shared %map[%i, %i, %i, %i, %i, %i], %s : !llvm.ptr, !llvm.ptr<3>
  func.return
}
// CHECK: 'nvvm.cp.async.bulk.tensor.global.shared' takes 1 to 5 coordinates, got 6

// -----

func.func @barrier_id() {
  nvvm.barrier.sync 16, 128
  func.return
}
// CHECK: 'nvvm.barrier.sync' barrier id must be in 0..15, got 16

// -----

func.func @barrier_two_ids(%id: i32) {
  "nvvm.barrier.sync"(%id) <{barrier_id = 1 : i32, count = 128 : i32}> : (i32) -> ()
  func.return
}
// CHECK: 'nvvm.barrier.sync' takes its id either as a constant or as an operand, not both or neither

// -----

func.func @barrier_count() {
  nvvm.barrier.sync 1, 100
  func.return
}
// CHECK: 'nvvm.barrier.sync' counts whole warps (a multiple of 32 up to 1024 threads), got 100

// -----

func.func @setmaxnreg_odd() {
  nvvm.setmaxnreg inc 230
  func.return
}
// CHECK: 'nvvm.setmaxnreg' registers must be a multiple of 8 in 24..256, got 230

// -----

func.func @remote_expect(%b: !llvm.ptr<3>, %i: i32) {
  nvvm.mbarrier.arrive %b expect_tx %i cta %i : !llvm.ptr<3>
  func.return
}
// CHECK: 'nvvm.mbarrier.arrive' announces bytes on its own CTA's barriers only: expect_tx and cta exclude each other

// -----

func.func @bulk_load_generic_source(%s: !llvm.ptr<3>, %g: !llvm.ptr, %n: i32) {
  nvvm.cp.async.bulk.shared.global %s, %g, %n, %s : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
  func.return
}
// CHECK: 'nvvm.cp.async.bulk.shared.global' source must be in global memory (!llvm.ptr<1>), got !llvm.ptr

// -----

func.func @bulk_load_global_barrier(%s: !llvm.ptr<3>, %g: !llvm.ptr<1>, %n: i32) {
  nvvm.cp.async.bulk.shared.global %s, %g, %n, %g : !llvm.ptr<3>, !llvm.ptr<1>, !llvm.ptr<1>
  func.return
}
// CHECK: 'nvvm.cp.async.bulk.shared.global' barrier must be in shared memory (!llvm.ptr<3>), got !llvm.ptr<1>

// -----

func.func @bulk_store_global_source(%g: !llvm.ptr<1>, %n: i32) {
  nvvm.cp.async.bulk.global.shared %g, %g, %n : !llvm.ptr<1>, !llvm.ptr<1>
  func.return
}
// CHECK: 'nvvm.cp.async.bulk.global.shared' source must be in shared memory (!llvm.ptr<3>), got !llvm.ptr<1>

// -----

func.func @barrier_red_or_count(%i: i32) {
  %any = nvvm.barrier.red.or 1, 40, %i
  func.return
}
// CHECK: 'nvvm.barrier.red.or' counts whole warps (a multiple of 32 up to 1024 threads), got 40

// -----

func.func @tma_im2col_offsets(%s: !llvm.ptr<3>, %map: !llvm.ptr, %i: i32, %o: i16) {
  nvvm.cp.async.bulk.tensor.shared.global %s, %map[%i, %i, %i, %i] im2col [%o], %s : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
  func.return
}
// CHECK: 'nvvm.cp.async.bulk.tensor.shared.global' im2col takes an offset for each coordinate but the channel and the batch: 2, got 1

// -----

func.func @prefetch_map_in_global(%map: !llvm.ptr<1>, %i: i32) {
  nvvm.cp.async.bulk.prefetch.tensor.l2.global %map[%i, %i] : !llvm.ptr<1>
  func.return
}
// CHECK: 'nvvm.cp.async.bulk.prefetch.tensor.l2.global' takes the tensor map by its generic address (!llvm.ptr), got !llvm.ptr<1>

// -----

func.func @local_cluster_release(%b: !llvm.ptr<3>) {
  nvvm.mbarrier.arrive %b release_cluster : !llvm.ptr<3>
  func.return
}
// CHECK: 'nvvm.mbarrier.arrive' releases at cluster scope on a peer CTA's barrier only: release_cluster needs cta

// -----

func.func @mapa_of_global(%p: !llvm.ptr<1>, %i: i32) {
  %0 = nvvm.mapa %p, %i : !llvm.ptr<1> -> !llvm.ptr<7>
  func.return
}
// CHECK: 'nvvm.mapa' pointer must be in shared memory (!llvm.ptr<3>), got !llvm.ptr<1>

// -----

func.func @mapa_to_generic(%p: !llvm.ptr<3>, %i: i32) {
  %0 = nvvm.mapa %p, %i : !llvm.ptr<3> -> !llvm.ptr
  func.return
}
// CHECK: 'nvvm.mapa' yields a shared::cluster pointer (!llvm.ptr<7>), got !llvm.ptr
