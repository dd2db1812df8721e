"""A stack of Linear layers (NeRF's MLP, MeshGraphNets' MLPs) as a Kitsune pipeline.

Every layer is a stage: its CTAs stay resident and loop over tiles of BM rows, each the same
wgmma tile the bulk-synchronous GEMM computes (`kernels.gemm.emit_tile`), so the two forms
differ only in where a tile's activations come from and go:

    layer 0:       t = acquire_empty q1             rows (t mod T) * BM of X  ->  entry t of q1
    layer l:       t = acquire_full q_l;  multiply entry t of q_l;  release_empty q_l, t;
                   acquire_empty q_{l+1} at t;  store into entry t of q_{l+1}
    last layer:    t = acquire_full q_L            entry t of q_L  ->  rows (t mod T) * BM of Y
    (layer norm:   t = acquire_full q_N            layer_norm(entry t of q_N) -> rows of Y)

Tickets name the same BM rows in every queue (a relaying stage passes on the ticket it
consumed), so the rows a tile holds are never carried in the payload. Tickets are never reset
(a run starts where the last one stopped), hence `mod T`: a run draws exactly T tickets per
queue, worker w of a stage's n taking ceil((T - w) / n) of them. The activations between
layers live only in the queues (in L2), never in a full M x width tensor.

A worker is a CTA, or (`groups=2`, the default) one of its two warpgroups: each draws,
multiplies and hands on its own 64-row tiles (queue ops `threads 128`, its own A ring and
named barrier), so that one warpgroup's queue waits and copies overlap the other's multiply,
and the CTA loads its layer's weights once for both. On an H100 the NeRF trunk at 2^18 rows
took 0.76 ms so against 0.94 with one 128-row worker per CTA.

A stage may compute several consecutive layers (`fused`): the earlier layer's staged store
leaves its tile in the worker's A ring, where it is the later layer's A (k-tile j in stage j),
and both layers' weights stay resident side by side.

All layers share one pair of shared-memory stage rings (one BM x BK ring for A, one BN x BK
for the weights) and one block size, so dataflow-persistent-kernel fuses them into one
cooperative kernel whose shared memory is one layer's, not the sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from tilesync.contract import MAX_QUEUE_GROUPS, QUEUE_GROUP_BARRIER_BASE, TILES_ATTR
from tilesync.dialects import dataflow
from tilesync.dialects import tile as tl
from tilesync.kernels.builder import BlockBuilder
from tilesync.kernels.config import (
    MAX_SHARED_PER_BLOCK,
    GemmConfig,
    LayerNormConfig,
    SharedMemoryExceeded,
    gemm_config,
)
from tilesync.kernels.gemm import (
    TileOperands,
    TilePlace,
    emit_tile,
    load_resident_b,
    named_args,
    stage_buffer_types,
    stage_buffers,
)
from tilesync.kernels.layer_norm import emit_layer_norm_rows, load_affine
from tilesync.kernels.row_dot import emit_row_dots, load_row_weights

MODULE = "mlp_stack"
NORM_STAGE = "layer_norm"
PIPELINE = "mlp"
BK = 64  # wgmma's K-major 128-byte rows
ACCUMULATORS_PER_CTA = 128 * 256  # f32, 128 a thread of a 256-thread block


class RingsTooLarge(SharedMemoryExceeded):
    """The stack's shared-memory rings (resident weights included) exceed a block's."""


@dataclass(frozen=True)
class MlpStack:
    """`rows` x widths[0] in, Linear(widths[l], widths[l+1]) + ReLU for each l (no ReLU for
    the layers in `plain_layers`), fp16; a layer in `skips` takes cat([X, h]) (the input
    beside the previous layer's output: NeRF's skip, `skips=(5,)`), of widths[0] + widths[l]
    columns, and a layer of `side_inputs` cat([V_i, h]) with an input V_i of its own (NeRF's
    viewing directions into its colour head).

    `ctas`: CTAs of each layer's stage (None: `default_ctas`); `entries_per_cta`: entries
    of each queue between layers, per worker of the larger stage it joins; `stages`: k-tiles
    in flight."""

    rows: int
    widths: tuple[int, ...]
    tile_rows: int = 64
    stages: int = 5  # 3 of a tile's 4 k-tiles of A in flight (H100, 2^18: 0.751 ms, 4: 0.771)
    ctas: tuple[int, ...] | None = None
    entries_per_cta: int = 2
    sms: int = 132
    """CTAs that can be resident at once (SMs x blocks per SM): what default_ctas shares."""
    resident_weights: bool = True
    """Each stage CTA loads its layer's weights into shared memory once, before its first
    tile (a stage multiplies every tile by the same weights); else every tile copies them."""
    groups: int = 2
    """Tiles a CTA works on at once, each by a queue worker of its own (a warpgroup of a
    64-row tile with 2; 1: the whole CTA, tiles of up to 128 rows; 4 warpgroups where the
    layers are at most 128 wide)."""
    draw_ahead: bool = False
    """A worker draws the ticket of its next tile (`dataflow.draw_full`, the first layer
    `draw_empty`) at the end of the current one, before its release, so the counter's round
    trip overlaps the release's fence instead of starting the next tile. No gain on an H100
    (NeRF trunk: 0.742 against 0.736-0.746 ms at 2^18 rows, 0.220 against 0.217 at 2^16);
    drawn as soon as the current ticket is held it was slower (0.76-0.77 against 0.72-0.73):
    a ticket drawn ahead waits for a busy worker where an idle one would have taken it."""
    skips: tuple[int, ...] = ()
    side_inputs: tuple[tuple[int, int], ...] = ()
    """(layer, width) of each further input V_0, V_1, ... (rows x width): the layer multiplies
    cat([V_i, h]) (NeRF: its 27-wide viewing directions, padded to 64, beside the feature)."""
    plain_layers: tuple[int, ...] = ()
    """Layers without the ReLU (MeshGraphNets' MLPs end in a plain Linear; NeRF's feature and
    colour layers)."""
    fused: tuple[int, ...] = ()
    """Layers computed in the stage of the layer before them: the tile between the two stays
    in the worker's A ring (the earlier layer's staged store leaves it there as the later
    one's k-tiles), and both layers' weights stay resident side by side; a stage with a light
    layer (NeRF's 64-wide first, its 16-wide colour) then does not pay a stage's handoffs
    for it."""
    dot_head: int | None = None
    """A layer whose input rows also go through a Linear to one output, S = h · w + b, into S
    (rows): NeRF's density from the trunk's output. Its stage takes the dots on SIMT lanes, a
    warp a row, from the queue entry it has just multiplied, before giving the entry back."""
    layer_norm: bool = False
    """A layer norm (gamma, beta) of the last layer's rows, as a SIMT stage of its own that
    reads them from one more queue (MeshGraphNets: Linear+ReLU, Linear+ReLU, Linear,
    LayerNorm); its workers are the layers', each warp normalizing its share of an entry's
    rows at once."""
    layer_norm_eps: float = 1e-5
    staged_store: bool = True
    """A tile leaves through shared memory in whole 16-byte chunks of rows (GemmConfig's
    staged_store), not as the accumulators' 4-byte stores: on an H100 the NeRF trunk's
    pipeline then took 0.94 instead of 1.61 ms at 2^18 rows (the stores' L1 wavefronts, eight
    lines a warp store, had bound every stage). Layers whose width is not whole 64-column
    boxes (NeRF's 16-wide colour output) store their accumulators directly."""

    def __post_init__(self) -> None:
        if len(self.widths) < 3:
            raise ValueError("a pipeline needs at least two layers (three widths): one layer "
                             "is one bulk-synchronous kernel")
        if any(n % 16 or not 0 < n <= 256 for n in self.widths[1:]):
            raise ValueError(f"a layer's width is one wgmma tile of 16-column warp tiles: a "
                             f"multiple of 16 up to 256, got {self.widths[1:]}")
        width = max(self.widths[1:])
        if any(k % BK for k in self.widths[:-1]) or any(w % BK for _, w in self.side_inputs):
            raise ValueError(f"each layer's input widths must be multiples of {BK}, got "
                             f"{self.widths[:-1]} and side inputs {self.side_inputs}")
        sides = [layer for layer, _ in self.side_inputs]
        if len(set(sides)) != len(sides) or set(sides) & set(self.skips) or \
                any(not 0 < layer < self.layers for layer in sides):
            raise ValueError(f"a layer 1 to {self.layers - 1} takes one concatenated input "
                             f"at most: skips {self.skips}, side inputs {self.side_inputs}")
        heads = {*self.skips, *sides, self.dot_head}
        for layer in self.fused:
            if not 0 < layer < self.layers or layer in heads:
                raise ValueError(f"a fused layer is one of layers 1 to {self.layers - 1} that "
                                 f"reads only the layer before it (no skip, side input or dot "
                                 f"head), got {layer}")
            if not (self.staged_store and self.resident_weights) or self.widths[layer] % BK or \
                    self.widths[layer] // BK > self.stages:
                raise ValueError(f"layer {layer} is fused: its input ({self.widths[layer]} "
                                 f"columns) stays in the A ring as whole k-tiles, at most "
                                 f"{self.stages} (the ring's stages), staged, and its weights "
                                 f"resident")
        if any(not 0 <= layer < self.layers for layer in self.plain_layers):
            raise ValueError(f"plain layers are layers 0 to {self.layers - 1}, got "
                             f"{self.plain_layers}")
        if self.dot_head is not None and (
                not 0 < self.dot_head < self.layers
                or self.in_width(self.dot_head) != self.widths[self.dot_head]):
            raise ValueError(f"the dot head reads a layer's input entry (layers 1 to "
                             f"{self.layers - 1}, without a concatenation), got layer "
                             f"{self.dot_head}")
        if self.rows % self.tile_rows:
            raise ValueError(f"rows ({self.rows}) must be a multiple of the tile's "
                             f"{self.tile_rows}")
        if not 1 <= self.groups <= MAX_QUEUE_GROUPS or \
                self.groups * self.tile_rows * width > ACCUMULATORS_PER_CTA:
            raise ValueError(f"a CTA's groups hold at most {ACCUMULATORS_PER_CTA} accumulators "
                             f"together (128 x 256 fill a 256-thread block's registers), got "
                             f"groups={self.groups} x {self.tile_rows} rows x {width}")
        if self.stage_count < 2:
            raise ValueError("a pipeline needs at least two stages: with every layer fused "
                             "into one, it is one bulk-synchronous kernel")
        if self.ctas is not None and len(self.ctas) != self.stage_count:
            raise ValueError(f"{self.stage_count} stages, {len(self.ctas)} CTA counts")
        if any(not 0 < layer < self.layers for layer in self.skips):
            raise ValueError(f"a skip concatenates the input to a later layer's: layers 1 to "
                             f"{self.layers - 1}, got {self.skips}")
        if self.shared_bytes > MAX_SHARED_PER_BLOCK:
            raise RingsTooLarge(f"{self.shared_bytes} bytes of shared memory for the rings of "
                             f"{self.stages} stages: more than the {MAX_SHARED_PER_BLOCK} a "
                             f"block can have; use fewer stages")
        for layer in range(self.layers):  # each layer's tile (its GemmConfig's own checks)
            self.layer_config(layer)
        if self.layer_norm:
            self.norm_config(self.rows)

    @property
    def layers(self) -> int:
        return len(self.widths) - 1

    @property
    def stage_layers(self) -> list[list[int]]:
        """The layers of each layers' stage (several where `fused`)."""
        stages: list[list[int]] = []
        for layer in range(self.layers):
            if layer in self.fused:
                stages[-1].append(layer)
            else:
                stages.append([layer])
        return stages

    @property
    def stage_count(self) -> int:
        """The layers' stages and the layer norm's."""
        return len(self.stage_layers) + self.layer_norm

    def stage_name(self, stage: int) -> str:
        """`layer3`, `layers0_1` for fused layers, `layer_norm`: its kernel's too."""
        if self.layer_norm and stage == self.stage_count - 1:
            return NORM_STAGE
        layers = self.stage_layers[stage]
        return f"layer{layers[0]}" if len(layers) == 1 else \
            "layers" + "_".join(map(str, layers))

    def resident_places(self, layers: list[int]) -> list[tuple[int, int]]:
        """Where each layer's resident weights start in the weights' buffer (k-tile slot,
        row): a layer beside the one before it, in rows below it, where it has no more k-tiles
        and both fit the buffer's rows (NeRF's 16-wide colour beside its 128-wide hidden
        layer), else in slots of its own after it."""
        rows = max(self.widths[1:])
        places: list[tuple[int, int]] = []
        block = (0, 0)  # the slots of the last layer placed in slots of its own: first, count
        below = 0  # the rows of that block taken
        for layer in layers:
            k_tiles, width = self.in_width(layer) // BK, self.widths[layer + 1]
            if places and below + width <= rows and k_tiles <= block[1]:
                places.append((block[0], below))
                below += width
                continue
            first = block[0] + block[1]
            places.append((first, 0))
            block, below = (first, k_tiles), width
        return places

    def resident_slots(self) -> int:
        """k-tile slots of the weights' buffer: the most a stage's layers take."""
        most = 0
        for layers in self.stage_layers:
            places = self.resident_places(layers)
            most = max(most, max(slot + self.in_width(layer) // BK
                                 for (slot, _), layer in zip(places, layers, strict=True)))
        return most

    @property
    def width(self) -> int:
        return self.widths[-1]

    def head_width(self, layer: int) -> int:
        """Columns concatenated before the previous output's: X's at a skip, V_i's."""
        sides = dict(self.side_inputs)
        return self.widths[0] if layer in self.skips else sides.get(layer, 0)

    def in_width(self, layer: int) -> int:
        """Columns `layer` multiplies: the previous output's, and a concatenated input's."""
        return self.widths[layer] + self.head_width(layer)

    @property
    def tiles(self) -> int:
        return self.rows // self.tile_rows

    def layer_config(self, layer: int, rows: int | None = None) -> GemmConfig:
        """Layer `layer`'s GEMM: one BM x width tile per queue entry (rows=None), or the
        bulk-synchronous kernel over `rows` rows; the same tile either way."""
        bm, width = self.tile_rows, self.widths[layer + 1]
        relu = layer not in self.plain_layers
        return gemm_config(rows or bm, width, self.in_width(layer), (bm, width, BK),
                           (bm // 16, 1), self.stages, "f16", "col",
                           "bias_relu" if relu else "bias",
                           f"layer{layer}", dynamic_shared=True, mma="wgmma",
                           wgmma_in_flight=1 if self.stages > 2 else 0,
                           staged_store=self.staged_store and width % BK == 0,
                           a_head=self.head_width(layer))

    @property
    def threads(self) -> int:
        """The block: `groups` times the threads of one tile."""
        return self.groups * self.layer_config(0).threads

    @property
    def group_threads(self) -> int | None:
        """The queue ops' `threads`: None when the whole CTA is one worker."""
        return self.layer_config(0).threads if self.groups > 1 else None

    def stage_ctas(self) -> tuple[int, ...]:
        return self.ctas if self.ctas is not None else default_ctas(self)

    def queue_entries(self) -> list[int]:
        ctas = self.stage_ctas()
        return [self.entries_per_cta * self.groups * max(ctas[q], ctas[q + 1])
                for q in range(self.stage_count - 1)]

    def shared_types(self) -> tuple[MemRefType, MemRefType]:
        """The stage rings every layer shares: A's, and the weights' (with resident weights,
        the k-tile slots of the stage whose layers' weights take most, `resident_slots`)."""
        widest = max(range(self.layers), key=lambda layer: self.widths[layer + 1])
        sa_type, sb_type = stage_buffer_types(self.layer_config(widest))
        if self.groups > 1:  # a ring of A per group
            sa_type = MemRefType(sa_type.element_type, [self.groups, *sa_type.get_shape()],
                                 memory_space=sa_type.memory_space)
        if not self.resident_weights:
            return sa_type, sb_type
        return sa_type, MemRefType(sb_type.element_type,
                                   [self.resident_slots(), *sb_type.get_shape()[1:]],
                                   memory_space=sb_type.memory_space)

    @property
    def shared_bytes(self) -> int:
        """The rings' bytes, aligned as the kernel places them."""
        align = self.layer_config(0).stage_alignment
        return sum(-(-t.element_type.size * math.prod(t.get_shape()) // align) * align
                   for t in self.shared_types())

    def norm_config(self, rows: int) -> LayerNormConfig:
        """The layer norm bulk-synchronous over `rows` rows, a warp per row (the pipeline's
        stage normalizes an entry's rows with the same row emitter)."""
        return LayerNormConfig(rows, self.width, self.layer_norm_eps, self.threads // 32)

    def queue_type(self, queue: int, entries: int) -> dataflow.QueueType:
        """Queue `queue` (stage `queue`'s output), of `entries` tiles."""
        produced = self.stage_layers[queue][-1] + 1
        payload = MemRefType(self.layer_config(0).element_type,
                             [self.tile_rows, self.widths[produced]])
        return dataflow.QueueType(entries, payload)


def fitting_stack(rows: int, widths: tuple[int, ...], **kwargs) -> MlpStack:
    """The stack with the most stages (up to the default) whose rings fit a block's shared
    memory: a skip's wider layer keeps more weights resident (NeRF's trunk: 4), and a layer's
    own rings (GemmConfig's, with B's) must fit too (128-row tiles of 256: 4)."""
    most = MlpStack.__dataclass_fields__["stages"].default
    for stages in range(most, 2, -1):
        try:
            return MlpStack(rows, widths, stages=stages, **kwargs)
        except SharedMemoryExceeded:
            continue
    return MlpStack(rows, widths, stages=2, **kwargs)


WIDEST_QUEUE_GROUPS = 4
"""The most queue workers a stack's CTA gets: four warpgroups, a 512-thread block."""


def most_queue_groups(widths: tuple[int, ...], tile_rows: int = 64) -> int:
    """The most queue workers (MlpStack.groups, up to WIDEST_QUEUE_GROUPS, at least the default
    2) whose tiles' accumulators fit a CTA's registers together: 4 for stacks at most 128 wide,
    2 for 256. More workers a CTA overlap more of each tile's queue handoffs (MeshGraphNets'
    edge MLP on an H100 at 2^18 rows: 0.253 ms with 4, 0.321 with 2)."""
    width = max(widths[1:])
    fitting = [g for g in range(WIDEST_QUEUE_GROUPS, 1, -1)
               if g * tile_rows * width <= ACCUMULATORS_PER_CTA]
    return fitting[0] if fitting else MlpStack.__dataclass_fields__["groups"].default


LIGHT_LAYER = 1 / 3
"""A layer whose weights (input x output columns) are at most this fraction of the heaviest
layer's is light: a stage of its own would spend its time on handoffs, not multiplies."""


def light_fusion(rows: int, widths: tuple[int, ...], **kwargs) -> tuple[int, ...]:
    """The layers to fuse (MlpStack.fused) so that a light first layer shares its stage with
    the second and a light last layer shares the stage before it, where the stack allows it
    (both, else either, else none). The benched stacks are its cases: NeRF's 64-wide first
    layer and 16-wide colour (fused (1, 10): 0.871 ms on an H100 at 2^18 rows, against 0.98
    with either alone and 1.03 with neither) and MeshGraphNets' last layer (fused (2,): 0.191
    ms, against 0.223)."""
    unfused = fitting_stack(rows, widths, **kwargs)
    weights = [unfused.in_width(layer) * widths[layer + 1] for layer in range(unfused.layers)]
    light = [w <= LIGHT_LAYER * max(weights) for w in weights]
    layers = len(weights)
    first = (1,) if layers > 2 and light[0] else ()
    last = (layers - 1,) if layers > 2 and light[-1] and layers - 1 not in first else ()
    for fused in (first + last, first, last):
        if not fused:
            continue
        try:
            fitting_stack(rows, widths, fused=fused, **kwargs)
        except ValueError:
            continue
        return fused
    return ()


def default_ctas(stack: MlpStack) -> tuple[int, ...]:
    """As many CTAs for every layer, one CTA per SM in all, the SMs left over to the widest
    layers (a skip's) one each: a tile's time is mostly its loads, stores and queue handoffs,
    not its k-loop (on an H100 the 64-wide first layer took 0.89 of a 256-wide layer's time
    bulk-synchronously), but a layer with more k-tiles than the others is the pipeline's
    slowest (NeRF's trunk at 2^18 rows: 0.783 ms with 16 CTAs for every layer, 0.745 with
    the four left over on the skip). The bench also sizes stages from measured rates
    (dataflow-allot-ctas)."""
    share = max(1, stack.sms // stack.stage_count)
    ctas = [share] * stack.stage_count
    widest = max(map(stack.in_width, range(stack.layers)))
    takers = [stage for stage, layers in enumerate(stack.stage_layers)
              if any(stack.in_width(layer) == widest for layer in layers)]
    for spare in range(stack.sms - share * stack.stage_count):
        ctas[takers[spare % len(takers)]] += 1
    return tuple(ctas)


def _stage_kernel(stack: MlpStack, stage: int, queue_types: list[dataflow.QueueType]
                  ) -> gpu.FuncOp:
    """Kernel of a layers' stage: (q_in?, q_out?, [X | V_i], W, bias, [w_dot, b_dot, S], [Y]);
    X at the first stage and at a skip, V_i at its side input, the dot head's own three at
    its layer; a stage of several layers (`fused`) takes W{l}, bias{l} for each layer l."""
    layers = stack.stage_layers[stage]
    lead = layers[0]  # the layer that reads the stage's input
    cfg = stack.layer_config(lead)
    # `last`: the stage that writes Y (the layer norm's, when there is one)
    first = stage == 0
    last = layers[-1] == stack.layers - 1 and not stack.layer_norm
    skip = lead in stack.skips
    sides = [i for i, (at, _) in enumerate(stack.side_inputs) if at == lead]
    dot = lead == stack.dot_head
    elem = cfg.element_type
    q_in = None if first else queue_types[stage - 1]
    q_out = None if last else queue_types[stage]
    inputs: list[Attribute] = [q for q in (q_in, q_out) if q is not None]
    names = [n for n, q in (("q_in", q_in), ("q_out", q_out)) if q is not None]
    if first or skip:
        inputs.append(MemRefType(elem, [stack.rows, stack.widths[0]]))
        names.append("X")
    for i in sides:
        inputs.append(MemRefType(elem, [stack.rows, stack.side_inputs[i][1]]))
        names.append(f"V{i}")
    weight_names = []
    for layer in layers:
        layer_cfg = stack.layer_config(layer)
        suffix = "" if len(layers) == 1 else str(layer)
        weight_names.append((f"W{suffix}", f"bias{suffix}"))
        inputs += [MemRefType(elem, [layer_cfg.N, layer_cfg.K]), MemRefType(elem, [layer_cfg.N])]
        names += weight_names[-1]
        if layer == stack.dot_head:
            inputs += [MemRefType(elem, [layer_cfg.K]), MemRefType(elem, [1]),
                       MemRefType(elem, [stack.rows])]
            names += ["w_dot", "b_dot", "S"]
    if last:
        inputs.append(MemRefType(elem, [stack.rows, stack.width]))
        names.append("Y")
    kernel = gpu.FuncOp(stack.stage_name(stage), (inputs, []), kernel=True,
                        known_block_size=[stack.threads, 1, 1])
    args = named_args(kernel, names)
    b = BlockBuilder(kernel.body.block)

    tid, local, worker, workers, group = _worker(b, stack)
    group_threads = stack.group_threads
    ring: list = []
    barrier = None
    if group is not None:
        ring = [group]
        barrier_id = b.emit(arith.IndexCastOp(b.addi(group, QUEUE_GROUP_BARRIER_BASE), i32))

        def barrier(bb: BlockBuilder) -> None:  # the group's, as its queue ops use
            bb.insert(tl.NamedBarrierOp(barrier_id, group_threads))
    warp = b.divui(local, 32)
    wtm = cfg.tile[0] // cfg.warps[0]
    warp_m = b.muli(warp, wtm)
    warp_n = b.idx(0)
    sa_type, sb_type = stack.shared_types()
    sa = b.emit(memref.GetGlobalOp("smem_a", sa_type))
    sb = b.emit(memref.GetGlobalOp("smem_b", sb_type))
    places = stack.resident_places(layers)
    if stack.resident_weights:
        for layer, (w_name, _), at in zip(layers, weight_names, places, strict=True):
            load_resident_b(b, stack.layer_config(layer), args[w_name], sb, tid, stack.threads,
                            at)
    if dot:
        lane = b.remui(local, 32)
        dot_weights = load_row_weights(b, args["w_dot"], cfg.K, lane)
        dot_bias = b.load_f32(args["b_dot"], [b.idx(0)])
    mine = _tickets_of(b, stack, worker, workers)

    drawn_queue = args["q_out"] if first else args["q_in"]
    draw_op = dataflow.DrawEmptyOp if first else dataflow.DrawFullOp

    def draw_if(bb: BlockBuilder, cond, otherwise) -> SSAValue:
        """A ticket drawn ahead when `cond` (the worker has that tile), else `otherwise`."""
        then, other = Block(), Block()
        drawn = BlockBuilder(then).emit(draw_op(drawn_queue, threads=group_threads))
        BlockBuilder(then).insert(scf.YieldOp(drawn))
        BlockBuilder(other).insert(scf.YieldOp(otherwise))
        return bb.emit(scf.IfOp(cond, [IndexType()], Region(then), Region(other)))

    carried = []
    if stack.draw_ahead:
        carried = [draw_if(b, b.ult(b.idx(0), mine), b.idx(0))]
    body = Block(arg_types=[IndexType()] * (1 + len(carried)))
    lb = BlockBuilder(body)
    zero = lb.idx(0)
    given = body.args[1] if stack.draw_ahead else None
    if first:
        ticket = lb.emit(dataflow.AcquireEmptyOp(args["q_out"], given, threads=group_threads))
    else:
        ticket = lb.emit(dataflow.AcquireFullOp(args["q_in"], given, threads=group_threads))
    row0 = lb.muli(lb.remui(ticket, stack.tiles), stack.tile_rows)
    a = args["X"] if first else lb.emit(dataflow.EntryOp(args["q_in"], ticket))
    # the output entry's address, written only after its acquire in `handoff`
    c = args["Y"] if last else lb.emit(dataflow.EntryOp(args["q_out"], ticket))

    def give_back(bb: BlockBuilder) -> None:
        bb.insert(dataflow.ReleaseEmptyOp(args["q_in"], ticket, threads=group_threads))

    def handoff(hb: BlockBuilder, reads_input: bool, writes_output: bool) -> None:
        """Once a layer's tile is multiplied: the stage's input entry goes back to the
        producers after the layer that reads it (with a dot head, once its dots are taken),
        and a relaying stage waits for its output entry only before the layer that writes it
        (the multiply overlapped both)."""
        if first:  # its ticket came with its output entry
            return
        if reads_input and not dot:
            give_back(hb)
        if not last and writes_output:
            hb.emit(dataflow.AcquireEmptyOp(args["q_out"], ticket, threads=group_threads))

    head = args["X"] if skip else args[f"V{sides[0]}"] if sides else None
    for k, (layer, (w_name, bias_name), at) in enumerate(zip(layers, weight_names, places,
                                                            strict=True)):
        reads, writes = k == 0, k == len(layers) - 1
        emit_tile(lb, stack.layer_config(layer),
                  TileOperands(a if reads else sa, args[w_name], c if writes else sa,
                               args[bias_name], A_head=head if reads else None),
                  TilePlace(local, warp, warp_m, warp_n, row0 if first and reads else zero,
                            zero, (zero, zero), c_m0=row0 if last and writes else zero,
                            head_m0=row0), sa, sb,
                  resident_b=stack.resident_weights,
                  after_mainloop=lambda hb, r=reads, w=writes: handoff(hb, r, w),
                  ring=ring, barrier=barrier, resident_at=at, a_in_ring=not reads,
                  keep_in_ring=not writes)
    following = []
    if stack.draw_ahead:  # the next tile's ticket, while this one's stores drain
        following = [draw_if(lb, lb.ult(lb.addi(body.args[0], 1), mine), given)]
    if not last:
        lb.insert(dataflow.ReleaseFullOp(args["q_out"], ticket, threads=group_threads))
    if dot:  # the entry's rows once more, from L2, while the next stage takes the tile
        warps = cfg.threads // 32
        rows = [lb.addi(warp, r) for r in range(0, stack.tile_rows, warps)]
        emit_row_dots(lb, a, rows, dot_weights, dot_bias, args["S"],
                      [lb.addi(row0, r) for r in rows], lane)
        give_back(lb)
    lb.insert(scf.YieldOp(*following))
    b.insert(scf.ForOp(b.idx(0), mine, b.idx(1), carried, Region(body)))
    b.insert(gpu.ReturnOp([]))
    return kernel


def _worker(b: BlockBuilder, stack: MlpStack
            ) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue, SSAValue | None]:
    """(thread, thread in its worker, worker, workers, group): the CTA is one worker, or
    (stack.groups > 1) each of its groups of stack.group_threads threads is."""
    tid = b.emit(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    cta = b.emit(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    count = b.emit(gpu.GridDimOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    if stack.group_threads is None:
        return tid, tid, cta, count, None
    group = b.divui(tid, stack.group_threads)
    return (tid, b.remui(tid, stack.group_threads), b.addi(b.muli(cta, stack.groups), group),
            b.muli(count, stack.groups), group)


def _tickets_of(b: BlockBuilder, stack: MlpStack, worker: SSAValue, workers: SSAValue
                ) -> SSAValue:
    """This worker's share of the T tickets: ceil((T - worker) / workers), as
    (T + workers - 1 - worker) / workers so that a worker past T (more than tiles) gets 0,
    not a wrapped count."""
    spread = b.addi(workers, stack.tiles - 1)
    return b.divui(b.emit(arith.SubiOp(spread, worker)), workers)


def _norm_kernel(stack: MlpStack, q_in: dataflow.QueueType) -> gpu.FuncOp:
    """The layer norm's stage kernel: (q_in, gamma, beta, Y). Its workers are the layers'
    (each group of a CTA, or the CTA); warp w of a worker normalizes rows w, w + warps, ... of
    each entry it takes, all of them at once, into Y's rows of the ticket (on an H100 at 2^18
    rows of MeshGraphNets a row at a time, one worker a CTA, bound the pipeline: 0.60 ms,
    against 0.35 with the rows at once and 0.32 with four workers a CTA)."""
    elem = stack.layer_config(0).element_type
    vector = MemRefType(elem, [stack.width])
    kernel = gpu.FuncOp(NORM_STAGE, ([q_in, vector, vector,
                                      MemRefType(elem, [stack.rows, stack.width])], []),
                        kernel=True, known_block_size=[stack.threads, 1, 1])
    args = named_args(kernel, ["q_in", "gamma", "beta", "Y"])
    b = BlockBuilder(kernel.body.block)
    _, local, worker, workers, _ = _worker(b, stack)
    threads = stack.group_threads
    warps = (threads or stack.threads) // 32
    warp, lane = b.divui(local, 32), b.remui(local, 32)
    affine = load_affine(b, args["gamma"], args["beta"], stack.width, lane)

    body = Block(arg_types=[IndexType()])
    lb = BlockBuilder(body)
    ticket = lb.emit(dataflow.AcquireFullOp(args["q_in"], threads=threads))
    row0 = lb.muli(lb.remui(ticket, stack.tiles), stack.tile_rows)
    entry = lb.emit(dataflow.EntryOp(args["q_in"], ticket))
    rows = [lb.addi(warp, r) for r in range(0, stack.tile_rows, warps)]
    emit_layer_norm_rows(lb, entry, rows, args["Y"], [lb.addi(row0, r) for r in rows], affine,
                         lane, stack.layer_norm_eps)
    lb.insert(dataflow.ReleaseEmptyOp(args["q_in"], ticket, threads=threads))
    lb.insert(scf.YieldOp())
    b.insert(scf.ForOp(b.idx(0), _tickets_of(b, stack, worker, workers), b.idx(1), [],
                       Region(body)))
    b.insert(gpu.ReturnOp([]))
    return kernel


def _queue_types(stack: MlpStack) -> list[dataflow.QueueType]:
    return [stack.queue_type(q, n) for q, n in enumerate(stack.queue_entries())]


def mlp_pipeline_module(stack: MlpStack) -> ModuleOp:
    """The stage kernels in one gpu.module and the `dataflow.pipeline` that runs them."""
    queue_types = _queue_types(stack)
    kernels = [_stage_kernel(stack, stage, queue_types)
               for stage in range(len(stack.stage_layers))]
    if stack.layer_norm:
        kernels.append(_norm_kernel(stack, queue_types[-1]))
    rings = stage_buffers(stack.layer_config(0), stack.shared_types())
    gmod = gpu.ModuleOp(StringAttr(MODULE),  # type: ignore[arg-type]
                        Region(Block([*rings, *kernels])))
    return ModuleOp([gmod, pipeline_op(stack, queue_types)])


def pipeline_op(stack: MlpStack, queue_types: list[dataflow.QueueType] | None = None
                ) -> dataflow.PipelineOp:
    """The `dataflow.pipeline` of the stack's stages and queues, its stages naming their
    kernels in gpu.module MODULE (mlp_pipeline_module builds them; what sizes the stages needs
    only this)."""
    queue_types = queue_types if queue_types is not None else _queue_types(stack)
    ctas = stack.stage_ctas()
    ops: list = [dataflow.QueueOp(f"h{q + 1}", queue_types[q], pin_l2=True)
                 for q in range(stack.stage_count - 1)]
    last = stack.stage_count - 1
    for stage in range(stack.stage_count):
        norm = stack.layer_norm and stage == last
        name = stack.stage_name(stage)
        op = dataflow.StageOp(
            name, SymbolRefAttr(MODULE, [name]),
            dataflow.Resource.SIMT if norm else dataflow.Resource.TENSOR, ctas[stage],
            inputs=[] if stage == 0 else [f"h{stage}"],
            outputs=[] if stage == last else [f"h{stage + 1}"])
        # every stage takes each of the T tickets once a launch (dataflow-verify balances them)
        op.attributes[TILES_ATTR] = IntegerAttr(stack.tiles, i64)
        ops.append(op)
    return dataflow.PipelineOp(PIPELINE, ops)


def stage_arguments(stack: MlpStack, x, weights, biases, y, norm=None, sides=(), dot=None
                    ) -> dict[str, list]:
    """DataflowProgram.run's arguments: each stage's own (the queues are bound there);
    `norm`: the layer norm's (gamma, beta); `sides`: V_0, V_1, ...; `dot`: the dot head's
    (w, b, S)."""
    if len(sides) != len(stack.side_inputs) or (dot is None) != (stack.dot_head is None):
        raise ValueError(f"the stack takes {len(stack.side_inputs)} side inputs and "
                         f"{'a' if stack.dot_head is not None else 'no'} dot head's (w, b, S)")
    args = {}
    for stage, layers in enumerate(stack.stage_layers):
        lead = layers[0]
        own = [x] if lead == 0 or lead in stack.skips else []
        own += [v for (at, _), v in zip(stack.side_inputs, sides, strict=True) if at == lead]
        for layer in layers:
            own += [weights[layer], biases[layer]]
            if layer == stack.dot_head:
                own += list(dot)
        if layers[-1] == stack.layers - 1 and not stack.layer_norm:
            own.append(y)
        args[stack.stage_name(stage)] = own
    if stack.layer_norm:
        if norm is None:
            raise ValueError("a stack with a layer norm runs with norm=(gamma, beta)")
        args[NORM_STAGE] = [*norm, y]
    return args


__all__ = ["LIGHT_LAYER", "MlpStack", "RingsTooLarge", "default_ctas", "fitting_stack",
           "light_fusion", "mlp_pipeline_module", "pipeline_op", "stage_arguments"]
