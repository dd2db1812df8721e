// dataflow-insert-queues designed @take's input, but its kernel does not take the queue yet.
builtin.module {
  gpu.module @k {
    gpu.func @make(%q: !dataflow.queue<2 x memref<64xf32>>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
    gpu.func @take(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
  dataflow.pipeline @p {
    dataflow.queue @q : !dataflow.queue<2 x memref<64xf32>>
    dataflow.stage @make {kernel = @k::@make, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [], outputs = [@q]}
    dataflow.stage @take {kernel = @k::@take, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@q], outputs = [], dataflow.unbound}
  }
}
