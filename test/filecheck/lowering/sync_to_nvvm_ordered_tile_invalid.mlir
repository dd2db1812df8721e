// RUN: tilesync-opt %s -p convert-sync-to-nvvm --split-input-file --verify-diagnostics | filecheck %s

// A block takes one tile: two ordered sync.tile ops of one kernel naming different orders
// cannot both be it.
builtin.module {
  gpu.module @m {
    gpu.func @two_orders(%out: memref<?xindex>) kernel {
      %x, %y = sync.tile order #sync.order<column_major> : index, index
      %x2, %y2 = sync.tile order #sync.order<row_major> : index, index
      memref.store %x2, %out[%y] : memref<?xindex>
      gpu.return
    }
  }
}
// CHECK: sync_to_nvvm_ordered_tile_invalid.mlir:9:7: convert-sync-to-nvvm: the ordered sync.tile ops of one kernel name different orders: a block takes one tile

// -----

// The tile the others reuse must be taken before them: the first in the entry block.
builtin.module {
  gpu.module @m {
    gpu.func @nested(%out: memref<?xindex>, %c: i1) kernel {
      scf.if %c {
        %x, %y = sync.tile order #sync.order<row_major> : index, index
        memref.store %x, %out[%y] : memref<?xindex>
      }
      %x2, %y2 = sync.tile order #sync.order<row_major> : index, index
      memref.store %x2, %out[%y2] : memref<?xindex>
      gpu.return
    }
  }
}
// CHECK: sync_to_nvvm_ordered_tile_invalid.mlir:27:7: convert-sync-to-nvvm: a kernel with several ordered sync.tile ops takes its tile once: the first must be in the kernel's entry block, so that it runs before the others
