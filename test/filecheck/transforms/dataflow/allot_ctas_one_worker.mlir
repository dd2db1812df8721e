// RUN: tilesync-opt %s -p 'dataflow-allot-ctas{sms=132}' | filecheck %s

// A split reduction's final takes its tile's 2 partials (`dataflow.reads`) as one worker, the
// one CTA dataflow-insert-queues gave it: the allotment keeps it there (more CTAs, each drawing
// a tile's tickets one at a time, could each hold a partial and wait for each other), and the
// pipeline is bound by it: 1 CTA of 132 at 1.32e6 tiles/s on the whole GPU is 1e4 tiles/s,
// which 3 CTAs of the fan-in (2 tiles an item) sustain.
builtin.module {
  gpu.module @k {
    gpu.func @f() kernel {
      gpu.return
    }
  }
  dataflow.pipeline @split {
    dataflow.queue @fanin_tiles pin_l2 : !dataflow.queue<3 x tensor<128x64xf32>>
    dataflow.stage @fanin {dataflow.unbound, kernel = @k::@f, resource = #dataflow.resource<tensor>, ctas = 64 : i64, inputs = [], outputs = [@fanin_tiles], bsp_rate = 1.0e6 : f64, tiles = 64 : i64}
    dataflow.stage @final {dataflow.unbound, kernel = @k::@f, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@fanin_tiles], outputs = [], bsp_rate = 1.32e6 : f64, tiles = 32 : i64, dataflow.reads = {fanin_tiles = 2 : i64}}
  }
}

// CHECK:      dataflow.pipeline @split attributes {dataflow.allotment = "1e+04 items/s, bound by final"} {
// CHECK:        dataflow.stage @fanin {{.*}}ctas = 3 : i64
// CHECK-NEXT:   dataflow.stage @final {{.*}}ctas = 1 : i64
