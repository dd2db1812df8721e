// input 64511 of seed 1129: test/filecheck/compat/gpu_syntax/generic.mlir; swap-lines, value
"builtin.module"() ({
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<?xf32>, i32) -> (), kernel}> ({
    ^bb0(%buf: memref<?xf32>, %n: i32):
      %tx = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %by = "gpu.block_id"() <{dimension = #gpu<dim y>}> : () -> index
      %dz = "gpu.block_dim"() <{dimension = #gpu<dim z>}> : () -> index
      %c = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %ix = "gpu.global_id"() <{dimension = #gpu<dim x>}> {upper_bound = 1024 : index} : () -> index
      %l = "gpu.lane_id"() : () -> index
      "gpu.barrier"() : () -> ()
      "gpu.return"() : () -> ()
    }) {sym_name = "k", gpu.known_block_size = array<i32: 128, 1, 1>} : () -> ()
    "gpu.func"() <{function_type = (f32) -> f32}> ({
  }) : () -> ()
      "gpu.return"(%v) : (f32) -> ()
    }) {sym_name = "helper"} : () -> ()
    ^bb0(%v: f32):
  "func.func"() <{sym_name = "host", function_type = (index) -> ()}> ({
  ^bb0(%c: index):
    "gpu.launch"(%c, %c, %c, %c, %c, %c) <{operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>}> ({
    ^bb0(%b0: index, %b1: index, %b2: index, %t0: index, %t1: index, %t2: index, %g0: index, %g1: index, %g2: index, %s0: index, %s1: index, %s2: index):
      %f = "arith.constant"() <{value = 1.0 : f32}> : () -> f32
      %r = "gpu.all_reduce"(%f) ({
      ^bb1(%lhs: f32, %rhs: f32):
        %sum = "arith.addf"(%lhs, %rhs) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
        "gpu.yield"(%sum) : (f32) -> ()
      }) : (f32) -> f32
      "gpu.terminator"() : () -> ()
    }) : (index, index, index, index, index, index) -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
