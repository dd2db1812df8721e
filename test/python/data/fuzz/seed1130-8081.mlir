// input 8081 of seed 1130: test/filecheck/lowering/dataflow_to_nvvm_draw.mlir; delete-lines, integer
builtin.module {
  gpu.module @kernels {
    gpu.func @source(%x: !dataflow.queue<4 x memref<128xf32>>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %d0 = dataflow.draw_empty %x : !dataflow.queue<4 x memref<128xf32>>
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_empty %x at %d : !dataflow.queue<4 x memref<128xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_empty %x : !dataflow.queue<4 x memref<128xf32>>
        }
        dataflow.release_full %x, %t : !dataflow.queue<4 x memref<128xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
    gpu.func @relay(%x: !dataflow.queue<4 x memref<128xf32>>, %y: !dataflow.queue<2 x memref<128xf32>>, %n: index) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %d0 = dataflow.draw_full %x threads 128 : !dataflow.queue<4 x memref<128xf32>>
      %last = scf.for %i = %c0 to %n step %c1 iter_args(%d = %d0) -> (index) {
        %t = dataflow.acquire_full %x at %d threads 128 : !dataflow.queue<4 x memref<128xf32>>
        %i1 = arith.addi %i, %c1 : index
        %more = arith.cmpi ult, %i1, %n : index
        %next = scf.if %more -> (index) {
          %drawn = dataflow.draw_full %x threads 128 : !dataflow.queue<4 x memref<128xf32>>
          scf.yield %drawn : index
        } else {
          scf.yield %d : index
        }
        %u = dataflow.acquire_empty %y at %t threads 128 : !dataflow.queue<2 x memref<128xf32>>
        dataflow.release_empty %x, %t threads 128 : !dataflow.queue<4 x memref<128xf32>>
        dataflow.release_full %y, %u threads 128 : !dataflow.queue<2 x memref<128xf32>>
        scf.yield %next : index
      }
      gpu.return
    }
    gpu.func @sink(%y: !dataflow.queue<2 x memref<128xf32>>) kernel {
      %t = dataflow.acquire_full %y : !dataflow.queue<2 x memref<128xf32>>
      dataflow.release_empty %y, %t : !dataflow.queue<2 x memref<128xf32>>
      gpu.return
    }
  }
  dataflow.pipeline @ahead {
    dataflow.queue @x : !dataflow.queue<4 x memref<128xf32>>
    dataflow.queue @y : !dataflow.queue<2 x memref<128xf32>>
    dataflow.stage @src {kernel = @kernels::@source, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [], outputs = [@x]}
    dataflow.stage @mid {kernel = @kernels::@relay, resource = #dataflow.resource<simt>, ctas = 2 : i64, inputs = [@x], outputs = [@y]}
    dataflow.stage @end {kernel = @kernels::@sink, resource = #dataflow.resource<simt>, ctas = 3 : i64, inputs = [@y], outputs = []}
  }
}
