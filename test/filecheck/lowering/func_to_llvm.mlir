// RUN: tilesync-opt %s -p convert-func-to-llvm | filecheck %s
// RUN: tilesync-opt %s -p convert-func-to-llvm | tilesync-opt -p convert-func-to-llvm | filecheck %s --check-prefix=ROUNDTRIP

builtin.module attributes {gpu.container_module} {
  // CHECK: llvm.func @external(i32, i64) -> f32
  func.func private @external(i32, index) -> f32

  // CHECK-LABEL: llvm.func @caller(%{{.*}}: i32, %{{.*}}: i64) -> f32
  // CHECK: %[[R:.*]] = llvm.call @external(%{{.*}}, %{{.*}}) : (i32, i64) -> f32
  // CHECK: llvm.return %[[R]] : f32
  func.func @caller(%a: i32, %i: index) -> f32 {
    %r = func.call @external(%a, %i) : (i32, index) -> f32
    func.return %r : f32
  }

  // Memref arguments are bare pointers; the body sees the memref through a cast.
  // CHECK-LABEL: llvm.func @takes_memref
  // CHECK-SAME: (%[[M:.*]]: !llvm.ptr<1>, %[[I:.*]]: i64) -> i64
  // CHECK-NEXT: builtin.unrealized_conversion_cast %[[M]] : !llvm.ptr<1> to memref<16xf32>
  // CHECK-NEXT: builtin.unrealized_conversion_cast %[[I]] : i64 to index
  // CHECK: llvm.return %{{.*}} : i64
  func.func @takes_memref(%m: memref<16xf32>, %i: index) -> index {
    func.return %i : index
  }

  // CHECK-LABEL: llvm.func @void_call()
  // CHECK: llvm.call @no_result() : () -> ()
  // CHECK-NEXT: llvm.return{{$}}
  func.func private @no_result()
  func.func @void_call() {
    func.call @no_result() : () -> ()
    func.return
  }

  // The gpu.module stays; its gpu.funcs become llvm.funcs.
  // CHECK: gpu.module @kernels {
  // CHECK: llvm.func ptx_kernel @copy(%{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<3>, %{{.*}}: i64)
  // CHECK-SAME: passthrough = {{\[}}["nvvm.maxntid", "256,1,1"], ["nvvm.minctasm", "2"]]
  // CHECK-NOT: gpu.known_block_size
  // CHECK-NOT: tilesync.min_blocks_per_sm
  // CHECK: llvm.return{{$}}
  // CHECK: llvm.func @helper(%[[X:.*]]: f32) -> f32 {
  // CHECK-NEXT: llvm.return %[[X]] : f32
  // CHECK-NOT: gpu.func
  // CHECK-NOT: gpu.return
  // CHECK-NOT: func.

  // ROUNDTRIP: llvm.func ptx_kernel @copy
  // ROUNDTRIP-SAME: ["nvvm.maxntid", "256,1,1"]
  // ROUNDTRIP: llvm.func @helper
  gpu.module @kernels {
    gpu.func @copy(%src: memref<4096xf32>, %dst: memref<4096xf32, 3>, %n: index) kernel
        attributes {gpu.known_block_size = array<i32: 256, 1, 1>, tilesync.min_blocks_per_sm = 2 : i32} {
      gpu.return
    }
    gpu.func @helper(%x: f32) -> f32 {
      gpu.return %x : f32
    }
  }
}
