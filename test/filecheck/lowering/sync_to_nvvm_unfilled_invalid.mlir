// RUN: tilesync-opt %s -p convert-sync-to-nvvm --verify-diagnostics | filecheck %s
// RUN: tilesync-opt %s -p sync-generate-policies,sync-insert-post-wait,convert-sync-to-nvvm | filecheck %s --check-prefix=FILLED

// A program whose kernels still hold the hooks its sync.dependency calls for: lowered as it
// is, the hooks would vanish and @c would read @p's tiles without waiting for them. Refused at
// the first hook; the sync passes fill them first (FILLED), and lowering then goes through.
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
// CHECK: sync_to_nvvm_unfilled_invalid.mlir:13:7: convert-sync-to-nvvm: this sync.load_point of stage @c's kernel was never filled: lowering would drop the synchronization its sync.dependency calls for (run sync-generate-policies, sync-insert-post-wait and sync-verify first, as tilesync compile does)
// FILLED: gpu.func @f
// FILLED-NOT: sync.load_point
// FILLED: sync.dependency @p -> @c
