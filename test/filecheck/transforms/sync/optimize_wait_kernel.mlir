// RUN: tilesync-opt %s -p 'sync-annotate-occupancy,sync-drop-wait-kernel' --split-input-file | filecheck %s
// RUN: tilesync-opt %s -p 'sync-annotate-occupancy,sync-drop-wait-kernel{strict=true}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=STRICT

// Legal: 1024-thread blocks, 2 per SM (264 slots on 132 SMs); 237 + 237 blocks are
// 0.9 + 0.9 = 1.8 waves, fewer than 2, and 237 consumer blocks cannot fill the 264 slots,
// so even dispatched first they leave room for the producer. The wait-kernel goes.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 237>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 237>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p {priority = -1 : i64}
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
// CHECK:      sync.launch @p {priority = -1 : i64}
// CHECK-NEXT: sync.launch @c {stream = 1 : i64}
// CHECK-NOT:  sync.wait_kernel
// STRICT:     sync.launch @p {priority = -1 : i64}
// STRICT-NEXT: sync.launch @c {stream = 1 : i64}

// -----

// Illegal: 317 + 317 blocks are 1.2 + 1.2 = 2.4 waves; the wait-kernel stays (strict: error).
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 317>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 317>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p {priority = -1 : i64}
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
// CHECK:      sync.launch @p {priority = -1 : i64}
// CHECK-NEXT: sync.wait_kernel @p {stream = 1 : i64}
// CHECK-NEXT: sync.launch @c {stream = 1 : i64}
// STRICT: sync-drop-wait-kernel: cannot drop the wait-kernel of @p on stream 1: @p -> @c: producer and consumer take 1.201 + 1.201 = 2.402 waves, not fewer than 2

// -----

// Illegal although 66 + 317 blocks are only 0.25 + 1.2 = 1.45 waves: 317 consumer blocks
// dispatched before the producer would hold all 264 slots, spinning, and deadlock.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 66>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 317>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0 floordiv 5)
  sync.launch @p {priority = -1 : i64}
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
// CHECK:      sync.wait_kernel @p {stream = 1 : i64}
// STRICT: sync-drop-wait-kernel: cannot drop the wait-kernel of @p on stream 1: @p -> @c: 317 consumer blocks dispatched first could fill every SM (from 264 on no producer block fits): the wait-kernel is what keeps this from deadlocking

// -----

// Issue 13, class 1: W asked only about the launch right after the wait-kernel (@x, 10
// blocks: 1.55 waves with @p, legal) and dropped it; but the wait-kernel also orders @c, later
// on the same stream, and for @p and @c (1.52 + 0.76 = 2.27 waves) nothing else holds. The
// whole program decides: it stays.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 400>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.stage @x {kernel = @k::@f, grid = array<i64: 10>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 200>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
  sync.launch @p {priority = -1 : i64}
  sync.wait_kernel @p {stream = 1 : i64}
  sync.launch @x {stream = 1 : i64}
  sync.launch @c {stream = 1 : i64}
}
// CHECK:      sync.wait_kernel @p {stream = 1 : i64}
// CHECK-NEXT: sync.launch @x {stream = 1 : i64}
// STRICT: sync-drop-wait-kernel: cannot drop the wait-kernel of @p on stream 1: @p -> @c: producer and consumer take 1.515 + 0.758 = 2.273 waves, not fewer than 2
