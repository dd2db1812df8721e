// RUN: tilesync-opt - -o - < %s | filecheck %s
// RUN: tilesync compile - --emit mlir -o - < %s | filecheck %s --check-prefix=LOWERED
// RUN: tilesync explain - < %s | filecheck %s --check-prefix=EXPLAIN
// RUN: sed -e 's/posts = 1>/posts = 0>/' %s | not tilesync-opt - 2>&1 | filecheck %s --check-prefix=ERR
// RUN: sed -e 's/posts = 1>/posts = 0>/' %s | not tilesync compile - 2>&1 | filecheck %s --check-prefix=ERR
// RUN: sed -e 's/posts = 1>/posts = 0>/' %s | not tilesync explain - 2>&1 | filecheck %s --check-prefix=ERR
// `-` is standard input for every tool, and `-o -` standard output (the tools read a file
// named "-", and -o wrote one); a diagnostic names the input "stdin", as with no file at all.
builtin.module {
  gpu.module @kernels {
    gpu.func @producer(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>} {
      %tile = sync.tile : index
      sync.post %sems[%tile] epoch %epoch policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
      gpu.return
    }
  }
}
// CHECK: gpu.func @producer(
// CHECK: sync.post
// LOWERED: llvm.func ptx_kernel @producer(
// EXPLAIN: no sync.stage or dataflow.pipeline in this module
// ERR: stdin:13:7: error: policy posts must be positive, got 0
