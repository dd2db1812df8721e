// RUN: tilesync-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

gpu.module @m {
  gpu.func @k() kernel {
    %0 = gpu.thread_id w
    gpu.return
  }
}
// CHECK: gpu.thread_id expects a dimension: one of 'x', 'y' or 'z'

// -----

gpu.module @m {
  gpu.func @k() kernel {
    %0 = gpu.block_dim
    gpu.return
  }
}
// CHECK: gpu.block_dim expects a dimension: one of 'x', 'y' or 'z'

// -----

gpu.module @m {
  gpu.func @k(%a: f32) workgroup(%buf: memref<32xf32, 3>) kernel {
    gpu.return
  }
}
// CHECK: gpu.func `workgroup(...)` attributions are not supported by tilesync

// -----

gpu.module @m {
  gpu.func @k(%a: f32, i32) kernel {
    gpu.return
  }
}
// CHECK: gpu.func arguments must be all named or all unnamed

// -----

gpu.module @m {
  gpu.func @f(%a: f32) -> f32 {
    gpu.return %a
  }
}
// CHECK: Expected ':'

// -----

gpu.module @m {
  gpu.func @k(%a: f32) -> f32 kernel {
    gpu.return %a : f32
  }
}
// CHECK: Expected void return type for kernel function
