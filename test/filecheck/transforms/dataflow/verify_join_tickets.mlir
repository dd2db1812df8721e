// RUN: tilesync-opt %s -p 'dataflow-verify{sms=132}' --split-input-file --verify-diagnostics | filecheck %s

// A residual join: @P draws a tile's ticket of @p and gives it to @r (`at`); @M turns @p into @c;
// @J joins @r with @c, taking @c's ticket as @r's. @M's four CTAs draw @c's tickets in the order
// they come, each holding a tile of @p that need not be the one it draws: ticket t of @c is
// not tile t, so @J pairs different tiles, and with @p and @c short the queue simulator finds
// it stuck (4 of 600 runs: @J holds @r's ticket t and waits for @c's, whose holder waits for @p's
// entry, which waits for @J). dataflow-verify proved it before it followed tickets across stages.
builtin.module {
  gpu.module @k {
    gpu.func @prod(%p: !dataflow.queue<2 x memref<128xf16>>, %r: !dataflow.queue<8 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_empty %p : !dataflow.queue<2 x memref<128xf16>>
        %s = dataflow.acquire_empty %r at %t : !dataflow.queue<8 x memref<128xf16>>
        dataflow.release_full %p, %t : !dataflow.queue<2 x memref<128xf16>>
        dataflow.release_full %r, %s : !dataflow.queue<8 x memref<128xf16>>
      }
      gpu.return
    }
    gpu.func @mid(%p: !dataflow.queue<2 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_full %p : !dataflow.queue<2 x memref<128xf16>>
        %u = dataflow.acquire_empty %c : !dataflow.queue<1 x memref<128xf16>>
        dataflow.release_empty %p, %t : !dataflow.queue<2 x memref<128xf16>>
        dataflow.release_full %c, %u : !dataflow.queue<1 x memref<128xf16>>
      }
      gpu.return
    }
    gpu.func @join(%r: !dataflow.queue<8 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %a = dataflow.acquire_full %r : !dataflow.queue<8 x memref<128xf16>>
        %b = dataflow.acquire_full %c at %a : !dataflow.queue<1 x memref<128xf16>>
        dataflow.release_empty %r, %a : !dataflow.queue<8 x memref<128xf16>>
        dataflow.release_empty %c, %b : !dataflow.queue<1 x memref<128xf16>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @residual {
    dataflow.queue @p : !dataflow.queue<2 x memref<128xf16>>
    dataflow.queue @r : !dataflow.queue<8 x memref<128xf16>>
    dataflow.queue @c : !dataflow.queue<1 x memref<128xf16>>
    dataflow.stage @P {kernel = @k::@prod, resource = #dataflow.resource<tensor>, ctas = 8 : i64, inputs = [], outputs = [@p, @r], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @M {kernel = @k::@mid, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @J {kernel = @k::@join, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@r, @c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: verify_join_tickets.mlir:{{[0-9]+}}:9: dataflow-verify: stage @J: @c takes the ticket of @r (`at`), but the two queues' tickets do not name the same tiles: @r's tiles are numbered where @P draws them (a source), @c's where @M's queue workers draw them in the order they come, each holding a tile of its inputs that need not be the one the ticket names; the join would pair different tiles and can wait forever behind the one it holds (give each queue on the way the ticket of the input it comes from, `at`)

// -----

// The same join with @J's one queue worker drawing both tickets in step: the same pairing.
builtin.module {
  gpu.module @k {
    gpu.func @prod(%p: !dataflow.queue<2 x memref<128xf16>>, %r: !dataflow.queue<8 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_empty %p : !dataflow.queue<2 x memref<128xf16>>
        %s = dataflow.acquire_empty %r at %t : !dataflow.queue<8 x memref<128xf16>>
        dataflow.release_full %p, %t : !dataflow.queue<2 x memref<128xf16>>
        dataflow.release_full %r, %s : !dataflow.queue<8 x memref<128xf16>>
      }
      gpu.return
    }
    gpu.func @mid(%p: !dataflow.queue<2 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_full %p : !dataflow.queue<2 x memref<128xf16>>
        %u = dataflow.acquire_empty %c : !dataflow.queue<1 x memref<128xf16>>
        dataflow.release_empty %p, %t : !dataflow.queue<2 x memref<128xf16>>
        dataflow.release_full %c, %u : !dataflow.queue<1 x memref<128xf16>>
      }
      gpu.return
    }
    gpu.func @join(%r: !dataflow.queue<8 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %a = dataflow.acquire_full %r : !dataflow.queue<8 x memref<128xf16>>
        %b = dataflow.acquire_full %c : !dataflow.queue<1 x memref<128xf16>>
        dataflow.release_empty %r, %a : !dataflow.queue<8 x memref<128xf16>>
        dataflow.release_empty %c, %b : !dataflow.queue<1 x memref<128xf16>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @residual {
    dataflow.queue @p : !dataflow.queue<2 x memref<128xf16>>
    dataflow.queue @r : !dataflow.queue<8 x memref<128xf16>>
    dataflow.queue @c : !dataflow.queue<1 x memref<128xf16>>
    dataflow.stage @P {kernel = @k::@prod, resource = #dataflow.resource<tensor>, ctas = 8 : i64, inputs = [], outputs = [@p, @r], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @M {kernel = @k::@mid, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @J {kernel = @k::@join, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@r, @c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: dataflow-verify: stage @J: @c draws its tickets in step with @r's (one queue worker), but the two queues' tickets do not name the same tiles

// -----

// @M relays @p's ticket to @c (`at`): ticket t names tile t in all three queues, proved (the
// simulator: 600 runs clean).
builtin.module {
  gpu.module @k {
    gpu.func @prod(%p: !dataflow.queue<2 x memref<128xf16>>, %r: !dataflow.queue<8 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_empty %p : !dataflow.queue<2 x memref<128xf16>>
        %s = dataflow.acquire_empty %r at %t : !dataflow.queue<8 x memref<128xf16>>
        dataflow.release_full %p, %t : !dataflow.queue<2 x memref<128xf16>>
        dataflow.release_full %r, %s : !dataflow.queue<8 x memref<128xf16>>
      }
      gpu.return
    }
    gpu.func @mid(%p: !dataflow.queue<2 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_full %p : !dataflow.queue<2 x memref<128xf16>>
        %u = dataflow.acquire_empty %c at %t : !dataflow.queue<1 x memref<128xf16>>
        dataflow.release_empty %p, %t : !dataflow.queue<2 x memref<128xf16>>
        dataflow.release_full %c, %u : !dataflow.queue<1 x memref<128xf16>>
      }
      gpu.return
    }
    gpu.func @join(%r: !dataflow.queue<8 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %a = dataflow.acquire_full %r : !dataflow.queue<8 x memref<128xf16>>
        %b = dataflow.acquire_full %c at %a : !dataflow.queue<1 x memref<128xf16>>
        dataflow.release_empty %r, %a : !dataflow.queue<8 x memref<128xf16>>
        dataflow.release_empty %c, %b : !dataflow.queue<1 x memref<128xf16>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @residual {
    dataflow.queue @p : !dataflow.queue<2 x memref<128xf16>>
    dataflow.queue @r : !dataflow.queue<8 x memref<128xf16>>
    dataflow.queue @c : !dataflow.queue<1 x memref<128xf16>>
    dataflow.stage @P {kernel = @k::@prod, resource = #dataflow.resource<tensor>, ctas = 8 : i64, inputs = [], outputs = [@p, @r], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @M {kernel = @k::@mid, resource = #dataflow.resource<tensor>, ctas = 4 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @J {kernel = @k::@join, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@r, @c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: dataflow.pipeline @residual attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced on 3 queue(s)"}

// -----

// @M as one CTA, one queue worker: it takes @p's tickets in order and draws @c's in the same
// order, so ticket t of @c is tile t again: proved.
builtin.module {
  gpu.module @k {
    gpu.func @prod(%p: !dataflow.queue<2 x memref<128xf16>>, %r: !dataflow.queue<8 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_empty %p : !dataflow.queue<2 x memref<128xf16>>
        %s = dataflow.acquire_empty %r at %t : !dataflow.queue<8 x memref<128xf16>>
        dataflow.release_full %p, %t : !dataflow.queue<2 x memref<128xf16>>
        dataflow.release_full %r, %s : !dataflow.queue<8 x memref<128xf16>>
      }
      gpu.return
    }
    gpu.func @mid(%p: !dataflow.queue<2 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %t = dataflow.acquire_full %p : !dataflow.queue<2 x memref<128xf16>>
        %u = dataflow.acquire_empty %c : !dataflow.queue<1 x memref<128xf16>>
        dataflow.release_empty %p, %t : !dataflow.queue<2 x memref<128xf16>>
        dataflow.release_full %c, %u : !dataflow.queue<1 x memref<128xf16>>
      }
      gpu.return
    }
    gpu.func @join(%r: !dataflow.queue<8 x memref<128xf16>>, %c: !dataflow.queue<1 x memref<128xf16>>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tiles = arith.constant 8 : index
      %cta = gpu.block_id x
      %ctas = gpu.grid_dim x
      scf.for %i = %cta to %tiles step %ctas {
        %a = dataflow.acquire_full %r : !dataflow.queue<8 x memref<128xf16>>
        %b = dataflow.acquire_full %c at %a : !dataflow.queue<1 x memref<128xf16>>
        dataflow.release_empty %r, %a : !dataflow.queue<8 x memref<128xf16>>
        dataflow.release_empty %c, %b : !dataflow.queue<1 x memref<128xf16>>
      }
      gpu.return
    }
  }
  dataflow.pipeline @residual {
    dataflow.queue @p : !dataflow.queue<2 x memref<128xf16>>
    dataflow.queue @r : !dataflow.queue<8 x memref<128xf16>>
    dataflow.queue @c : !dataflow.queue<1 x memref<128xf16>>
    dataflow.stage @P {kernel = @k::@prod, resource = #dataflow.resource<tensor>, ctas = 8 : i64, inputs = [], outputs = [@p, @r], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @M {kernel = @k::@mid, resource = #dataflow.resource<tensor>, ctas = 1 : i64, inputs = [@p], outputs = [@c], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
    dataflow.stage @J {kernel = @k::@join, resource = #dataflow.resource<simt>, ctas = 1 : i64, inputs = [@r, @c], outputs = [], registers = 32 : i64, shared_bytes = 0 : i64, tiles = 8 : i64}
  }
}
// CHECK: dataflow.pipeline @residual attributes {dataflow.verified = "co-resident: {{.*}}; tickets balanced on 3 queue(s)"}
