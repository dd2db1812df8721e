// input 87145 of seed 2026: test/filecheck/dialects/llvmx/ops.mlir; delete-lines, duplicate-line
  llvm.func @ops(%s: !llvm.ptr<3>, %f: f32, %w: i64) {
    %0 = llvmx.fptosi %f : f32 to i32
    %1 = llvmx.fptoui %f : f32 to i64
    %2 = llvmx.uitofp %w : i64 to f32
    %3 = llvmx.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr
    llvm.return
  }
  llvm.func @ops(%s: !llvm.ptr<3>, %f: f32, %w: i64) {
}
