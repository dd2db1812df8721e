// RUN: tilesync-opt %s -p sync-insert-wait-kernel | filecheck %s
// RUN: tilesync-opt %s -p sync-use-pdl | filecheck %s
// RUN: tilesync-opt %s -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-use-pdl,sync-verify | filecheck %s --check-prefix=VERIFY

// A program without sync.launch runs its stages on stream 0 in program order: stream order
// already keeps @c behind @p, so neither pass has anything to order (no wait-kernel, no PDL)
// and neither refuses for want of a launch.
builtin.module {
  gpu.module @m {
    gpu.func @f(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = sync.tile : index
      %c64 = arith.constant 64 : index
      %i = arith.muli %t, %c64 : index
      sync.load_point operand 0 [%t]
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @m::@f, grid = array<i64: 4>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.stage @c {kernel = @m::@f, grid = array<i64: 4>, block = array<i64: 64>, tile = array<i64: 64>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
}
// CHECK-NOT: sync.wait_kernel
// CHECK-NOT: sync.launch
// CHECK-NOT: nvvm.griddepcontrol
// CHECK:     sync.stage @p
// CHECK-NOT: sync.wait_kernel
// CHECK-NOT: sync.launch

// VERIFY: sync.stage @c {{.*}}sync.progress = "@p: stream order"
