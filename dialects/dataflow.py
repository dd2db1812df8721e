"""The `dataflow` dialect: Kitsune-style spatial pipelines on a GPU.

Two levels live here.

Stage level (host side, no SSA values):

    dataflow.pipeline @mlp max_ctas(264) {
      dataflow.queue @h pin_l2 : !dataflow.queue<4 x tensor<128x64xf16>>
      dataflow.stage @gemm {kernel = @kernels::@gemm, resource = #dataflow.resource<tensor>,
                            ctas = 100 : i64, inputs = [], outputs = [@h]}
      dataflow.stage @softmax {kernel = @kernels::@softmax, resource = #dataflow.resource<simt>,
                               ctas = 32 : i64, inputs = [@h], outputs = []}
    }

A pipeline is a set of kernels (stages) that run *at the same time*, each in its own CTAs, and
hand tiles to each other through queues. All stages must be co-resident (a consumer CTA spins
on its queue while holding an SM slot), hence the `max_ctas` bound.

Kernel level (inside a stage's gpu.func, where a queue is a kernel argument of queue type):

    %slot = dataflow.acquire_empty %q : !dataflow.queue<4 x tensor<128x64xf16>>
    %tile = dataflow.entry %q, %slot : !dataflow.queue<4 x tensor<128x64xf16>>
              -> memref<128x64xf16>
    ... store the tile into %tile ...
    dataflow.release_full %q, %slot : !dataflow.queue<4 x tensor<128x64xf16>>

and on the consumer side `dataflow.acquire_full` / `dataflow.release_empty`.

Queue semantics (what the lowering implements). A queue is a ring of N entries in global
memory (meant to stay in L2), each one payload plus metadata padded to a cache line so that
entries never share a line. Every acquisition takes a *ticket*: a sequence number drawn from a
counter of the queue (one for the producer stage, one per consumer stage). The ticket is the
`index` the acquire ops return; its entry is `ticket mod N` and its round is `ticket div N`.
An entry is free for producer ticket t once every consumer stage released ticket t - N (always
in round 0); it is full for consumer ticket t once the producer of ticket t released it.
Tickets order the entries: consumers see payloads in ticket order, whichever CTA filled them.
Within a stage the CTAs share the tickets (each entry goes to one CTA of the stage); across
consumer stages a queue multicasts (each consumer stage sees every entry). One thread of the
CTA (the leader) does the bookkeeping (atomics, acquire loads, release fences); acquires end
with a CTA barrier so that every thread sees the entry, releases begin with one so that every
thread has finished with it. That acquire and release are the generic proxy's: a kernel that
moves an entry with bulk copies (`tile.bulk_load`, `tile.bulk_store`: the async proxy) fences
the proxies itself, a `tile.fence_proxy_async global` between the acquire and a bulk copy of
the entry, and one after a bulk write's completion, before the release (dataflow-verify
refuses a kernel that leaves one out).

Queue workers. By default the whole CTA is one worker: it acquires, uses and releases each
ticket together. With `threads N` on its acquire and release ops
(`dataflow.acquire_full %q threads 128 : ...`), a kernel whose block is (B, 1, 1) runs B / N
workers per CTA: each group of N consecutive threads (ids [kN, (k+1)N)) draws, uses and
releases tickets of its own, independently of the other groups (so one warpgroup's queue
latency overlaps another's compute). The group's first thread leads and the group's barrier
replaces the CTA's. The queue ops of a kernel all name the same `threads` (a worker releases
the tickets it acquired): `queue_workers` says which workers a kernel runs. Groups must not
wait for one another while holding a ticket (no CTA barrier between an acquire and its
release): like CTAs, workers hold entries, and the queues only progress if each can move on.

Drawing ahead. An acquire draws its ticket (an atomic on the counter, a round trip to L2) and
then waits for its entry. A worker that knows it will acquire again may draw that ticket early,
while it still works on the current one, and wait for it later:

    %next = dataflow.draw_full %q threads 128 : !dataflow.queue<...>
    ...
    %t = dataflow.acquire_full %q at %next threads 128 : !dataflow.queue<...>

The drawn value is the worker leader's alone until the acquire hands it to every thread, so it
may only reach (directly or through scf.for / scf.if values) the `at` of an acquire of the same
kind on the same queue, and a worker must acquire every ticket it draws (one drawn but never
acquired leaves its entry to nobody: the queue's next round waits for it forever).

Cluster queues. `dataflow.queue @q cluster : ...` keeps the queue in distributed shared memory
(sm_90) rather than L2: a payload goes from the producer's SM to the consumer's through the
SM-to-SM network, never to L2 and back. The pipeline then runs in clusters, each holding one
CTA of every stage (rank r of a cluster is CTA c of the r-th stage, c the cluster's index), so
all stages have the same CTA count, at most MAX_CLUSTER_BLOCKS stages, and every queue is a
cluster queue. Queue @q is one ring per cluster, of N entries, in the shared memory of its
consumer stage's CTA (so one consumer stage), filled by the producer stage's CTA of the same
cluster: the cluster's two CTAs are its only producer and consumer, each one worker (no
`threads`), drawing tickets 0, 1, 2, ... in order at every launch (no draws ahead, no `at`).
A pipeline marked `cluster` runs so without cluster queues too (its kernels reach each other's
shared memory by `tile.cluster_map`). Every stage kernel of a clustered pipeline meets its
cluster when it starts and before it returns (convert-dataflow-to-nvvm), so no CTA's shared
memory goes while a peer may reach it.
The entry is the consumer's shared memory as a generic address (`memref<..., 0 : i64>`):
plain stores from the producer reach it through the cluster's address window. An entry is
free for producer ticket t once the consumer released ticket t - N, full for the consumer once
the producer released t, each signalled by a transaction barrier of the waiting CTA that the
other arrives on remotely, releasing at cluster scope. Clusters never wait for one another,
and the hardware starts a cluster's CTAs together or not at all, so a clustered pipeline needs
no grid-wide co-residency.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    I32,
    ArrayAttr,
    DenseArrayBase,
    FlatSymbolRefAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ShapedType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    VectorType,
    i32,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    OpResult,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    NoTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tilesync.compat.rewrite_driver import ops_of, walk_ops
from tilesync.contract import (
    CLUSTER_QUEUES_ATTR,
    GENERIC_ADDRESS_SPACE,
    KNOWN_BLOCK_SIZE_ATTR,
    MAX_CLUSTER_BLOCKS,
    MAX_QUEUE_GROUPS,
    QUEUE_LINE_BYTES,
    UNBOUND_ATTR,
    Role,
    RoleKind,
    all_resident,
    whole_warps_error,
)
from tilesync.dialects.kernel_args import sync_roles

# Bytes of per-entry metadata (sequence numbers), padded to an L2 cache line so that producers
# and consumers spinning on neighbouring entries never falsely share a line.
ENTRY_METADATA_BYTES = QUEUE_LINE_BYTES


# ----------------------------------------------------------------------------------------------
# Types and attributes
# ----------------------------------------------------------------------------------------------


@irdl_attr_definition
class QueueType(ParametrizedAttribute, TypeAttribute):
    """A ring of `entries` tiles, each of shape and element type `payload`.

    Syntax: `!dataflow.queue<4 x tensor<128x64xf16>>` (a memref payload works the same way).
    """

    name = "dataflow.queue"

    entries: IntegerAttr[IntegerType]
    payload: TensorType | MemRefType

    def __init__(self, entries: int | IntegerAttr[IntegerType], payload: TensorType | MemRefType):
        if isinstance(entries, int):
            entries = IntegerAttr(entries, i64)
        super().__init__(entries, payload)

    @property
    def num_entries(self) -> int:
        return self.entries.value.data

    @property
    def payload_elements(self) -> int:
        count = 1
        for dim in self.payload.get_shape():
            count *= dim
        return count

    @property
    def payload_bytes(self) -> int:
        """Bytes of one entry's payload, as memory holds its elements (element_bytes)."""
        return self.payload_elements * element_bytes(self.payload.get_element_type())

    @property
    def entry_bytes(self) -> int:
        """Bytes one entry takes in the ring: payload padded to a cache line, plus metadata."""
        line = ENTRY_METADATA_BYTES
        return (self.payload_bytes + line - 1) // line * line + ENTRY_METADATA_BYTES

    @property
    def ring_bytes(self) -> int:
        """Bytes of global memory (ideally L2-resident) the whole ring needs."""
        return self.num_entries * self.entry_bytes

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            entries = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_keyword("x")
            payload = parser.parse_type()
            if not isinstance(payload, TensorType | MemRefType):
                parser.raise_error("queue payload must be a tensor or memref type", pos, parser.pos)
        return (IntegerAttr(entries, i64), payload)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.num_entries} x ")
        printer.print_attribute(self.payload)
        printer.print_string(">")

    def verify(self) -> None:
        if self.num_entries < 1:
            raise VerifyException(f"queue must have at least one entry, got {self.num_entries}")
        if any(dim < 0 for dim in self.payload.get_shape()):  # DYNAMIC_INDEX is negative
            raise VerifyException(f"queue payload must have a static shape, got {self.payload}")
        try:
            element_bytes(self.payload.get_element_type())
        except ValueError as err:
            raise VerifyException(str(err)) from err


def element_bytes(element_type: Attribute) -> int:
    """Bytes one element of a memref takes in memory, as the lowering lays it out: whole bytes
    (an i1 takes one), a vector its elements', an index 8. ValueError for other types."""
    if isinstance(element_type, VectorType):  # 16-byte payload elements: vector<4xi32>
        count = 1
        for dim in element_type.get_shape():
            count *= dim
        return count * element_bytes(element_type.get_element_type())
    if isinstance(element_type, IndexType):
        return 8
    bitwidth = getattr(element_type, "bitwidth", None)
    if isinstance(bitwidth, int):
        return max(1, (bitwidth + 7) // 8)
    raise ValueError(f"queue payload element type {element_type} has no known size in memory")


class Resource(StrEnum):
    """The SM resource a stage mostly uses; Kitsune pairs one SIMT and one TENSOR CTA per SM."""

    SIMT = "simt"
    TENSOR = "tensor"


@irdl_attr_definition
class ResourceAttr(EnumAttribute[Resource]):
    """`#dataflow.resource<simt>` or `#dataflow.resource<tensor>`."""

    name = "dataflow.resource"

    # Pretty form `#dataflow.resource<simt>`, as upstream MLIR prints enum attributes.
    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Resource:
        with parser.in_angle_brackets():
            return super().parse_parameter(parser)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            super().print_parameter(printer)


# ----------------------------------------------------------------------------------------------
# Stage level: pipeline, stage, queue declaration
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class PipelineOp(IRDLOperation):
    """A spatial pipeline: stages that all run at the same time and the queues between them.

    The body holds only `dataflow.stage` and `dataflow.queue`. Each queue has exactly one
    producer stage (any number of its CTAs may push) and at least one consumer stage (each
    consumer stage receives every entry); the stage graph is acyclic. Because consumer CTAs
    spin while holding an SM slot, every stage must be resident at once: when `max_ctas`
    (SMs x blocks per SM) is given, the stages' CTAs must fit in it.
    """

    name = "dataflow.pipeline"

    sym_name = prop_def(SymbolNameConstraint())
    max_ctas = opt_prop_def(IntegerAttr.constr(type=i64))
    cluster = opt_prop_def(UnitAttr)
    """Runs in clusters of one CTA a stage though no queue is a cluster queue (its kernels
    reach each other's shared memory by `tile.cluster_map`)."""
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), SymbolTable(), NoTerminator(), IsolatedFromAbove())

    def __init__(
        self,
        name: str | StringAttr,
        body: Region | Iterable[Operation] = (),
        max_ctas: int | None = None,
        cluster: bool = False,
    ):
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(name) if isinstance(name, str) else name
        }
        if max_ctas is not None:
            properties["max_ctas"] = IntegerAttr(max_ctas, i64)
        if cluster:
            properties["cluster"] = UnitAttr()
        if not isinstance(body, Region):
            body = Region(Block(body))
        super().__init__(properties=properties, regions=[body])

    # Syntax: `dataflow.pipeline @name (max_ctas(N))? (cluster)? (attributes {...})?
    # { stages, queues }`. Custom rather than declarative so that an empty body still gets its
    # block (as in MLIR's NoTerminator ops) and the verifier can say "needs at least one
    # stage".
    @classmethod
    def parse(cls, parser: Parser) -> PipelineOp:
        name = parser.parse_symbol_name()
        max_ctas = None
        if parser.parse_optional_keyword("max_ctas") is not None:
            with parser.in_parens():
                max_ctas = parser.parse_integer(allow_boolean=False)
        cluster = parser.parse_optional_keyword("cluster") is not None
        attributes = parser.parse_optional_attr_dict_with_keyword(["sym_name", "max_ctas",
                                                                   "cluster"])
        body = parser.parse_region()
        if not body.blocks:
            body.add_block(Block())
        op = cls(name, body, max_ctas=max_ctas, cluster=cluster)
        if attributes is not None:
            op.attributes.update(attributes.data)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.max_ctas is not None:
            printer.print_string(f" max_ctas({self.max_ctas.value.data})")
        if self.cluster is not None:
            printer.print_string(" cluster")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_empty_block=False)

    @property
    def stages(self) -> list[StageOp]:
        return [op for op in self.body.block.ops if isinstance(op, StageOp)]

    @property
    def queues(self) -> list[QueueOp]:
        return [op for op in self.body.block.ops if isinstance(op, QueueOp)]

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if not isinstance(op, StageOp | QueueOp):
                raise VerifyException(
                    f"'{self.name}' may only hold 'dataflow.stage' and 'dataflow.queue', "
                    f"found '{op.name}'"
                )
        if self.max_ctas is not None and self.max_ctas.value.data < 1:
            raise VerifyException(f"max_ctas must be positive, got {self.max_ctas.value.data}")
        stages = self.stages
        if not stages:
            raise VerifyException(f"pipeline @{self.sym_name.data} needs at least one stage")

        queues = {q.sym_name.data: q for q in self.queues}
        producers: dict[str, list[str]] = {name: [] for name in queues}
        consumers: dict[str, list[str]] = {name: [] for name in queues}
        for stage in stages:
            stage_name = stage.sym_name.data
            inputs = [ref.root_reference.data for ref in stage.inputs]
            outputs = [ref.root_reference.data for ref in stage.outputs]
            for queue_name in (*inputs, *outputs):
                if queue_name not in queues:
                    raise VerifyException(
                        f"stage @{stage_name} uses @{queue_name}, which is not a queue of "
                        f"pipeline @{self.sym_name.data}"
                    )
            for queue_name in set(inputs) & set(outputs):
                raise VerifyException(
                    f"stage @{stage_name} both produces and consumes queue @{queue_name}"
                )
            for queue_name in outputs:
                producers[queue_name].append(stage_name)
            for queue_name in inputs:
                consumers[queue_name].append(stage_name)

        for queue_name in queues:
            if len(producers[queue_name]) != 1:
                found = ", ".join(f"@{s}" for s in producers[queue_name]) or "none"
                raise VerifyException(
                    f"queue @{queue_name} must have exactly one producer stage, found {found}"
                )
            if not consumers[queue_name]:
                raise VerifyException(f"queue @{queue_name} has no consumer stage")

        self._verify_acyclic(producers, consumers)
        if self.clustered:
            self._verify_clustered(stages, consumers)

        if self.max_ctas is not None and not self.clustered:  # clusters wait on none other
            total = sum(stage.num_ctas for stage in stages)
            limit = self.max_ctas.value.data
            # max_ctas is the device's room for these CTAs: one pool of that many slots.
            if not all_resident([(stage.num_ctas, limit) for stage in stages], sms=1):
                raise VerifyException(
                    f"pipeline @{self.sym_name.data} needs {total} co-resident CTAs but "
                    f"max_ctas is {limit}"
                )

    @property
    def clustered(self) -> bool:
        """Whether the pipeline runs in clusters (`cluster`, or its queues are in distributed
        shared memory)."""
        return self.cluster is not None or any(q.in_cluster for q in self.queues)

    def _verify_clustered(self, stages: list[StageOp], consumers: dict[str, list[str]]
                          ) -> None:
        """A cluster holds one CTA of every stage: the queues between them never leave it."""
        name = f"pipeline @{self.sym_name.data}"
        if not all(q.in_cluster for q in self.queues):
            other = next(q for q in self.queues if not q.in_cluster)
            raise VerifyException(f"{name} runs in clusters, so every queue must be a cluster "
                                  f"queue: @{other.sym_name.data} is in global memory")
        if len(stages) > MAX_CLUSTER_BLOCKS:
            raise VerifyException(f"{name} runs one CTA of each of its {len(stages)} stages in "
                                  f"a cluster: at most {MAX_CLUSTER_BLOCKS} (the portable "
                                  "cluster size)")
        counts = {stage.num_ctas for stage in stages}
        if len(counts) > 1:
            listed = ", ".join(f"@{s.sym_name.data} {s.num_ctas}" for s in stages)
            raise VerifyException(f"{name} runs one CTA of each stage in a cluster, so its "
                                  f"stages need equal CTA counts, got {listed}")
        for queue_name, names in consumers.items():
            if len(names) > 1:
                raise VerifyException(f"cluster queue @{queue_name} has {len(names)} consumer "
                                      "stages: a ring in one CTA's shared memory has one")

    def _verify_acyclic(
        self, producers: dict[str, list[str]], consumers: dict[str, list[str]]
    ) -> None:
        # A cycle of stages would deadlock: each waits for a tile the next has not produced.
        successors: dict[str, list[str]] = {stage.sym_name.data: [] for stage in self.stages}
        for queue_name, producer in producers.items():
            for consumer in consumers[queue_name]:
                successors[producer[0]].append(consumer)
        visiting, done = set[str](), set[str]()

        def visit(stage: str, path: list[str]) -> None:
            if stage in done:
                return
            if stage in visiting:
                cycle = [*path[path.index(stage) :], stage]
                raise VerifyException(
                    "stage graph has a cycle: " + " -> ".join(f"@{s}" for s in cycle)
                )
            visiting.add(stage)
            for successor in successors[stage]:
                visit(successor, [*path, stage])
            visiting.remove(stage)
            done.add(stage)

        for stage in successors:
            visit(stage, [])


@irdl_op_definition
class StageOp(IRDLOperation):
    """One operator of a pipeline: the kernel `kernel` launched with `ctas` CTAs.

    `inputs` are the queues its CTAs consume, `outputs` the queues they produce, both naming
    `dataflow.queue` symbols of the enclosing pipeline. The kernel receives the queues as
    arguments of queue type, inputs first then outputs, in the order listed. `resource` tells
    the scheduler (and the CTA allotment) whether the stage is SIMT- or tensor-core-bound.
    """

    name = "dataflow.stage"

    sym_name = prop_def(SymbolNameConstraint())
    kernel = prop_def(SymbolRefAttr)
    resource = prop_def(ResourceAttr)
    ctas = prop_def(IntegerAttr.constr(type=i64))
    inputs = prop_def(ArrayAttr[FlatSymbolRefAttr])
    outputs = prop_def(ArrayAttr[FlatSymbolRefAttr])

    traits = traits_def(SymbolOpInterface(), HasParent(PipelineOp))
    irdl_options = (ParsePropInAttrDict(),)

    assembly_format = "$sym_name attr-dict"

    def __init__(
        self,
        name: str | StringAttr,
        kernel: SymbolRefAttr | str,
        resource: Resource | ResourceAttr,
        ctas: int,
        inputs: Sequence[str | FlatSymbolRefAttr] = (),
        outputs: Sequence[str | FlatSymbolRefAttr] = (),
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(name) if isinstance(name, str) else name,
                "kernel": SymbolRefAttr(kernel) if isinstance(kernel, str) else kernel,
                "resource": ResourceAttr(resource) if isinstance(resource, Resource) else resource,
                "ctas": IntegerAttr(ctas, i64),
                "inputs": ArrayAttr(_flat_refs(inputs)),
                "outputs": ArrayAttr(_flat_refs(outputs)),
            }
        )

    @property
    def num_ctas(self) -> int:
        return self.ctas.value.data

    def verify_(self) -> None:
        if self.num_ctas <= 0:
            raise VerifyException(
                f"stage @{self.sym_name.data} must have a positive CTA count, got {self.num_ctas}"
            )
        for port, refs in (("inputs", self.inputs), ("outputs", self.outputs)):
            names = [ref.root_reference.data for ref in refs]
            for dup in {n for n in names if names.count(n) > 1}:
                raise VerifyException(
                    f"stage @{self.sym_name.data} lists queue @{dup} twice in its {port}"
                )
        self._verify_kernel()

    def _verify_kernel(self) -> None:
        """The kernel must exist beside the pipeline; if it is function-like, its queue-typed
        arguments must be the stage's inputs then outputs, with the declared queue types (the
        lowering binds the rings to those arguments in that order)."""
        pipeline = self.parent_op()
        outer = pipeline.parent_op() if pipeline is not None else None
        if outer is None:
            return  # a pipeline built on its own, outside any module: nothing to resolve against
        kernel_text = str(self.kernel)
        kernel = SymbolTable.lookup_symbol(outer, self.kernel)
        if kernel is None:
            raise VerifyException(f"stage @{self.sym_name.data}: kernel {kernel_text} not found")
        function_type = kernel.get_attr_or_prop("function_type")
        if not isinstance(function_type, FunctionType) or not isinstance(pipeline, PipelineOp):
            return
        declared = {q.sym_name.data: q.queue_type for q in pipeline.queues}
        names = [ref.root_reference.data for ref in (*self.inputs, *self.outputs)]
        expected = [declared.get(name) for name in names]
        actual = [t for t in function_type.inputs if isinstance(t, QueueType)]
        if None in expected:
            return  # unknown queue names are reported by the pipeline verifier
        lowered = {str(role) for role in sync_roles(kernel) if role.kind is RoleKind.QUEUE}
        in_cluster = kernel.attributes.get(CLUSTER_QUEUES_ATTR)
        clustered = {a.data for a in in_cluster.data} if isinstance(in_cluster, ArrayAttr) \
            else set()
        if not actual and not lowered and not clustered and UNBOUND_ATTR in self.attributes:
            return  # designed at the stage level (dataflow-insert-queues); kernel not rewritten
        if not actual and (lowered or clustered):
            # convert-dataflow-to-nvvm made each queue in L2 a parameter the runtime binds,
            # and put each cluster queue's ring in shared memory
            missing = [name for name in names
                       if str(Role.queue(name)) not in lowered and name not in clustered]
            if missing:
                raise VerifyException(
                    f"stage @{self.sym_name.data}: kernel {kernel_text} was lowered without "
                    f"the queue(s) {', '.join('@' + m for m in missing)}"
                )
            return
        if actual != expected:
            raise VerifyException(
                f"stage @{self.sym_name.data}: kernel {kernel_text} takes queues "
                f"({', '.join(map(str, actual))}) but the stage's inputs then outputs are "
                f"({', '.join(map(str, expected))})"
            )


def _flat_refs(names: Sequence[str | FlatSymbolRefAttr]) -> list[FlatSymbolRefAttr]:
    return [SymbolRefAttr(n) if isinstance(n, str) else n for n in names]


@irdl_op_definition
class QueueOp(IRDLOperation):
    """Declares a queue of a pipeline. `pin_l2` asks the runtime to pin the ring in L2 (an
    access-policy window over its memory) for the pipeline's lifetime. `cluster` places it in
    distributed shared memory instead: one ring per cluster of the pipeline, in the shared
    memory of the consumer stage's CTA (see "Cluster queues" in the module's docstring)."""

    name = "dataflow.queue"

    sym_name = prop_def(SymbolNameConstraint())
    queue_type = prop_def(QueueType)
    pin_l2 = opt_prop_def(UnitAttr)
    cluster = opt_prop_def(UnitAttr)

    traits = traits_def(SymbolOpInterface(), HasParent(PipelineOp))

    assembly_format = ("$sym_name (`pin_l2` $pin_l2^)? (`cluster` $cluster^)? `:` "
                       "qualified($queue_type) attr-dict")

    def __init__(self, name: str | StringAttr, queue_type: QueueType, pin_l2: bool = False,
                 cluster: bool = False):
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(name) if isinstance(name, str) else name,
            "queue_type": queue_type,
        }
        if pin_l2:
            properties["pin_l2"] = UnitAttr()
        if cluster:
            properties["cluster"] = UnitAttr()
        super().__init__(properties=properties)

    @property
    def in_cluster(self) -> bool:
        return self.cluster is not None

    def verify_(self) -> None:
        if self.in_cluster and self.pin_l2 is not None:
            raise VerifyException(f"queue @{self.sym_name.data} is in distributed shared memory "
                                  "(`cluster`): it has no ring in global memory to pin in L2")


# ----------------------------------------------------------------------------------------------
# Kernel level: acquire / release / entry
# ----------------------------------------------------------------------------------------------


class _TicketOp(IRDLOperation):
    """An acquire or a release, executed by the whole block or, with `threads N`, by each group
    of N consecutive threads of a one-dimensional block (thread ids [kN, (k+1)N)), every group
    independently of the others: one queue worker per group."""

    threads = opt_prop_def(IntegerAttr[I32])

    def verify_(self) -> None:
        error = whole_warps_error(self.threads.value.data) if self.threads is not None else None
        if error is not None:
            raise VerifyException(f"'{self.name}': {error}")


def _threads_prop(threads: int | None) -> dict[str, Attribute | None]:
    return {"threads": None if threads is None else IntegerAttr(threads, i32)}


class _AcquireOp(_TicketOp):
    queue = operand_def(QueueType)
    ticket = opt_operand_def(IndexType)
    slot = result_def(IndexType)

    assembly_format = ("$queue (`at` $ticket^)? (`threads` $threads^)? attr-dict "
                       "`:` type($queue)")

    def __init__(self, queue: SSAValue | Operation, ticket: SSAValue | Operation | None = None,
                 threads: int | None = None):
        super().__init__(operands=[queue, [] if ticket is None else [ticket]],
                         result_types=[IndexType()], properties=_threads_prop(threads))


class _ReleaseOp(_TicketOp):
    queue = operand_def(QueueType)
    slot = operand_def(IndexType)

    assembly_format = "$queue `,` $slot (`threads` $threads^)? attr-dict `:` type($queue)"

    def __init__(self, queue: SSAValue | Operation, slot: SSAValue | Operation,
                 threads: int | None = None):
        super().__init__(operands=[queue, slot], properties=_threads_prop(threads))


@irdl_op_definition
class AcquireEmptyOp(_AcquireOp):
    """Producer end: wait for a free entry and return its ticket.

    The worker's leader takes the next producer ticket t (atomic add on the queue's tail),
    spins with an acquire load until every consumer stage has released ticket t - N from entry
    `t mod N` (nothing to wait for in round 0), then the worker's barrier hands the ticket to
    every thread of the worker (the CTA, or its group with `threads N`).
    With `at %t` the ticket is given instead of drawn: a stage that relays tiles from one queue
    to another passes on the ticket it consumed, so tickets name the same tile in every queue
    of a chain (the producer stage must then give every ticket exactly once); or it was drawn
    ahead by `dataflow.draw_empty`.
    """

    name = "dataflow.acquire_empty"


@irdl_op_definition
class ReleaseFullOp(_ReleaseOp):
    """Producer end: publish the filled entry of ticket `slot`.

    The worker's barrier first (every thread's stores to the entry are done), then its leader
    issues a gpu-scope release fence and marks the entry full for ticket `slot`.
    """

    name = "dataflow.release_full"


@irdl_op_definition
class AcquireFullOp(_AcquireOp):
    """Consumer end: wait for a filled entry and return its ticket.

    The worker's leader takes the next ticket t of its stage (atomic add on that stage's head),
    spins with an acquire load until entry `t mod N` is full for ticket t, then the worker's
    barrier. Consumers thus read payloads in ticket order. The entry must not be read through
    the non-coherent path.
    With `at %t` the ticket is given instead of drawn (every ticket exactly once per stage),
    or was drawn ahead by `dataflow.draw_full`.
    """

    name = "dataflow.acquire_full"


@irdl_op_definition
class ReleaseEmptyOp(_ReleaseOp):
    """Consumer end: give the entry of ticket `slot` back to the producers.

    The worker's barrier first (every thread is done reading), then its leader counts this
    stage's release of ticket `slot` on the entry (a release atomic); once every consumer stage
    has counted, producer ticket `slot + N` may reuse the entry.
    """

    name = "dataflow.release_empty"


@irdl_op_definition
class EntryOp(IRDLOperation):
    """The payload memory of the entry that ticket `slot` holds: entry `slot mod N` of the ring.

    The result is a memref of the payload's shape and element type. It is only valid between
    the acquire that returned `slot` and the matching release.
    """

    name = "dataflow.entry"

    queue = operand_def(QueueType)
    slot = operand_def(IndexType)
    buffer = result_def(MemRefType)

    assembly_format = "$queue `,` $slot attr-dict `:` type($queue) `->` type($buffer)"

    def __init__(
        self,
        queue: SSAValue | Operation,
        slot: SSAValue | Operation,
        buffer_type: MemRefType | None = None,
    ):
        if buffer_type is None:
            queue_type = SSAValue.get(queue).type
            assert isinstance(queue_type, QueueType)
            payload = queue_type.payload
            buffer_type = MemRefType(payload.get_element_type(), payload.get_shape())
        super().__init__(operands=[queue, slot], result_types=[buffer_type])

    def verify_(self) -> None:
        queue_type = self.queue.type
        assert isinstance(queue_type, QueueType)
        payload: ShapedType = queue_type.payload
        buffer = self.buffer.type
        assert isinstance(buffer, MemRefType)
        if (
            tuple(buffer.get_shape()) != tuple(payload.get_shape())
            or buffer.get_element_type() != payload.get_element_type()
        ):
            raise VerifyException(
                f"entry buffer {buffer} does not match the queue payload {payload}"
            )


class _DrawOp(_TicketOp):
    queue = operand_def(QueueType)
    ticket = result_def(IndexType)

    assembly_format = "$queue (`threads` $threads^)? attr-dict `:` type($queue)"

    ACQUIRE: ClassVar[type[_AcquireOp]]

    def __init__(self, queue: SSAValue | Operation, threads: int | None = None):
        super().__init__(operands=[queue], result_types=[IndexType()],
                         properties=_threads_prop(threads))

    def verify_(self) -> None:
        super().verify_()
        for use in drawn_ticket_uses(self.ticket):
            user = use.operation
            if (isinstance(user, self.ACQUIRE) and user.ticket is not None
                    and use.index == 1 and user.queue == self.queue):
                continue
            raise VerifyException(
                f"'{self.name}': the drawn ticket is the worker leader's alone until a "
                f"'{self.ACQUIRE.name}' on the same queue takes it (`at`) and hands it out, "
                f"but it reaches '{user.name}'")


@irdl_op_definition
class DrawEmptyOp(_DrawOp):
    """Producer end: draw the next producer ticket now, to wait for its free entry later
    (`dataflow.acquire_empty %q at %drawn`): the counter's round trip overlaps the worker's
    current tile. Only the worker's leader holds the value until that acquire."""

    name = "dataflow.draw_empty"
    ACQUIRE: ClassVar[type[_AcquireOp]] = AcquireEmptyOp


@irdl_op_definition
class DrawFullOp(_DrawOp):
    """Consumer end: draw the stage's next ticket now, to wait for its full entry later
    (`dataflow.acquire_full %q at %drawn`). Only the worker's leader holds the value until that
    acquire."""

    name = "dataflow.draw_full"
    ACQUIRE: ClassVar[type[_AcquireOp]] = AcquireFullOp


def _carried(loop: scf.ForOp, index: int) -> list[SSAValue]:
    """The iteration argument and the result of `loop`'s carried value `index`."""
    args = loop.body.blocks[0].args if loop.body.blocks else ()
    return [*args[1 + index:2 + index], *loop.results[index:index + 1]]


def _closure(start: SSAValue, step: Callable[[SSAValue], tuple[list, list]]) -> list:
    """What `step` finds from `start` and the values it leads to, each value visited once:
    `step(value)` gives (values to follow, what it found there)."""
    seen: set[SSAValue] = set()
    work, found = [start], []
    while work:
        current = work.pop()
        if current in seen:
            continue
        seen.add(current)
        more, ends = step(current)
        work += more
        found += ends
    return found


def drawn_ticket_uses(value: SSAValue) -> list:
    """The uses a drawn ticket reaches, followed through the values scf.for and scf.if carry
    (init operands, iteration arguments, yields, results): the acquires that wait for it, and
    anything else it must not reach."""

    def step(current: SSAValue) -> tuple[list, list]:
        more, found = [], []
        for use in current.uses:
            user = use.operation
            parent = user.parent_op()
            # a body of several blocks, or a yield unlike the results, is scf's own error: the
            # ticket is followed where the values exist
            if isinstance(user, scf.YieldOp) and isinstance(parent, scf.ForOp):
                more += _carried(parent, use.index)
            elif isinstance(user, scf.YieldOp) and isinstance(parent, scf.IfOp):
                more += parent.results[use.index:use.index + 1]
            elif isinstance(user, scf.ForOp) and use.index >= 3:
                more += _carried(user, use.index - 3)
            else:
                found.append(use)
        return more, found

    return _closure(value, step)


def ticket_sources(value: SSAValue) -> list[SSAValue]:
    """The values a ticket operand may hold (drawn_ticket_uses backwards): followed back
    through what scf.if and scf.for carry (results, iteration arguments, yields, init
    operands) to where they are made."""

    def step(current: SSAValue) -> tuple[list, list]:
        owner = current.owner
        if isinstance(current, OpResult) and isinstance(owner, scf.IfOp):
            return [block.last_op.operands[current.index] for region in owner.regions
                    for block in region.blocks if isinstance(block.last_op, scf.YieldOp)], []
        if isinstance(current, OpResult) and isinstance(owner, scf.ForOp):
            return _fed(owner, current.index), []
        if isinstance(current, BlockArgument) and isinstance(owner.parent_op(), scf.ForOp) \
                and current.index >= 1:
            return _fed(owner.parent_op(), current.index - 1), []
        return [], [current]

    return _closure(value, step)


def _fed(loop: scf.ForOp, index: int) -> list[SSAValue]:
    """The init operand and the yielded value of `loop`'s carried value `index`."""
    values = list(loop.iter_args[index:index + 1])
    last = loop.body.block.last_op
    if isinstance(last, scf.YieldOp):
        values += last.operands[index:index + 1]
    return values


def _check_draws_ahead(kernel: Operation) -> None:
    """A worker draws ahead only the tickets it takes before it holds an entry: those of its
    tile's first acquire, on one queue end. Drawn ahead later, an output ticket can be taken
    out of order with another worker's input ticket, and each waits for the other's entry (the
    queue simulator's counterexample: two relay workers, one-entry queues). QueueWorkersError
    otherwise."""
    drawn = sorted(drawn_acquires(kernel), key=walk_ops(kernel).index)
    if not drawn:
        return
    ends = {(op.queue, op.name) for op in drawn}
    if len(ends) > 1:
        raise QueueWorkersError(drawn[-1], f"'{drawn[-1].name}': the kernel draws ahead on "
                                f"{len(ends)} queue ends; a worker may draw ahead only the "
                                "tickets of its tile's first acquire")
    consumes = bool(ops_of(kernel, AcquireFullOp))
    for op in drawn:
        if isinstance(op, AcquireEmptyOp) and consumes:
            raise QueueWorkersError(op, f"'{op.name}' takes a ticket drawn ahead, but the "
                                    "kernel also consumes a queue: a worker holding its input "
                                    "entries would wait for an output ticket drawn out of "
                                    "order (draw ahead only the input tickets)")
        block = op.parent_block()
        assert block is not None
        for earlier in block.ops:
            if earlier is op:
                break
            if any(isinstance(inner, _AcquireOp) for inner in earlier.walk()):
                raise QueueWorkersError(op, f"'{op.name}' takes a ticket drawn ahead after "
                                        f"'{earlier.name}' acquired an entry: a worker may "
                                        "draw ahead only the tickets of its tile's first "
                                        "acquire")


def drawn_acquires(kernel: Operation) -> set[Operation]:
    """The acquires of `kernel` whose `at` ticket was drawn ahead (by a draw op)."""
    return {use.operation for op in ops_of(kernel, _DrawOp)
            for use in drawn_ticket_uses(op.ticket) if isinstance(use.operation, _AcquireOp)}


def given_tickets(stage: StageOp, kernel: Operation) -> dict[str, str]:
    """{queue: source} for each acquire of the stage's kernel given (`at`) the ticket of
    another of its queues (not one drawn ahead on its own): that queue's counter does not
    move, its ticket is the source's. An acquire whose ticket may come from several queues
    names none."""
    if not kernel.regions or not kernel.regions[0].blocks:
        return {}
    names = [r.root_reference.data for r in (*stage.inputs, *stage.outputs)]
    args = dict(zip([a for a in kernel.regions[0].blocks.first.args
                     if isinstance(a.type, QueueType)], names, strict=False))
    drawn = drawn_acquires(kernel)
    given: dict[str, str] = {}
    for op in ops_of(kernel, _AcquireOp):
        if op.ticket is None or op in drawn:
            continue
        sources = {args.get(v.owner.queue) for v in ticket_sources(op.ticket)
                   if isinstance(v.owner, _AcquireOp) and v.owner.queue != op.queue}
        queue = args.get(op.queue)
        if len(sources) == 1 and None not in sources and queue is not None:
            given[queue] = sources.pop()
    return given


TICKET_OPS = (AcquireEmptyOp, ReleaseFullOp, AcquireFullOp, ReleaseEmptyOp, DrawEmptyOp,
              DrawFullOp)
"""The ops a queue worker runs (`threads N`: which threads make a worker)."""
ACQUIRE_OPS = (AcquireEmptyOp, AcquireFullOp)


def cluster_queue_refusal(op: Operation, queue: str) -> str | None:
    """Why kernel-level `op` cannot use cluster queue `queue` (None: it can): each end is one
    worker a CTA taking its tickets in order as it acquires them, and an entry is the
    consumer's shared memory by its generic address."""
    if isinstance(op, DrawEmptyOp | DrawFullOp):
        return (f"'{op.name}': cluster queue @{queue} takes its tickets in order as it "
                "acquires them (no draws ahead)")
    if isinstance(op, _AcquireOp) and op.ticket is not None:
        return (f"'{op.name}': cluster queue @{queue} takes its tickets in order as it "
                "acquires them (no `at`)")
    if isinstance(op, _TicketOp) and op.threads is not None:
        return (f"'{op.name}': cluster queue @{queue} has one worker a CTA at each end (no "
                "`threads`)")
    if isinstance(op, EntryOp):
        space = op.buffer.type.memory_space  # type: ignore[attr-defined]
        if not (isinstance(space, IntegerAttr) and space.value.data == GENERIC_ADDRESS_SPACE):
            return (f"'{op.name}': the entry of cluster queue @{queue} is its consumer's "
                    "shared memory by its generic address: its memref takes memory space 0 "
                    f"(memref<..., 0 : i64>), got {op.buffer.type}")
    return None
"""The ops that take a ticket's entry (each one ticket a run)."""


@dataclass(frozen=True)
class QueueWorkers:
    """The queue workers of each CTA of a stage kernel: `count` of them, each the whole block
    (`threads` None) or a group of `threads` consecutive threads."""

    threads: int | None = None
    count: int = 1


class QueueWorkersError(Exception):
    """Why a kernel's queue ops cannot run as they say, about `op`."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


def _worker(op: _TicketOp) -> str:
    return "the block" if op.threads is None else f"groups of {op.threads.value.data} threads"


def queue_workers(kernel: Operation) -> QueueWorkers:
    """The queue workers of `kernel` (a gpu.func): those its acquire and release ops name
    (and the tickets they draw ahead, `_check_draws_ahead`).

    They must all name the same (a worker releases the tickets it acquired). With `threads N`,
    the kernel's block must be `gpu.known_block_size` (B, 1, 1), B a multiple of N, and make
    at most MAX_QUEUE_GROUPS groups (each synchronizes on a named barrier of its own).
    QueueWorkersError otherwise."""
    ops = ops_of(kernel, TICKET_OPS)
    if not ops:
        return QueueWorkers()
    _check_draws_ahead(kernel)
    first = ops[0]
    for op in ops[1:]:
        if op.threads != first.threads:
            raise QueueWorkersError(op, f"'{op.name}' is run by {_worker(op)} but "
                                    f"'{first.name}' by {_worker(first)}: a kernel's queue "
                                    "ops have one kind of worker (it releases the tickets it "
                                    "acquired)")
    if first.threads is None:
        return QueueWorkers()
    threads = first.threads.value.data
    name = kernel.get_attr_or_prop("sym_name")
    kernel_name = f"@{name.data}" if isinstance(name, StringAttr) else "the kernel"
    where = f"'{first.name}' threads {threads}"
    block = kernel.attributes.get(KNOWN_BLOCK_SIZE_ATTR)
    if not isinstance(block, DenseArrayBase):
        raise QueueWorkersError(first, f"{where}: {kernel_name} declares no block size "
                                f"({KNOWN_BLOCK_SIZE_ATTR}), so its groups cannot be counted")
    extents = tuple(block.get_values())
    if any(extent != 1 for extent in extents[1:]):
        raise QueueWorkersError(first, f"{where}: groups of threads need a one-dimensional "
                                f"block, {kernel_name} has {' x '.join(map(str, extents))}")
    if extents[0] % threads:
        raise QueueWorkersError(first, f"{where}: the block of {kernel_name} ({extents[0]} "
                                f"threads) is not a whole number of groups")
    count = extents[0] // threads
    if count > MAX_QUEUE_GROUPS:
        raise QueueWorkersError(first, f"{where}: the block of {kernel_name} ({extents[0]} "
                                f"threads) makes {count} groups, more than the "
                                f"{MAX_QUEUE_GROUPS} named barriers left for them")
    return QueueWorkers(threads, count)


Dataflow = Dialect(
    "dataflow",
    [
        PipelineOp,
        StageOp,
        QueueOp,
        AcquireEmptyOp,
        ReleaseFullOp,
        AcquireFullOp,
        ReleaseEmptyOp,
        DrawEmptyOp,
        DrawFullOp,
        EntryOp,
    ],
    [QueueType, ResourceAttr],
)

__all__ = [
    "ACQUIRE_OPS",
    "ENTRY_METADATA_BYTES",
    "TICKET_OPS",
    "AcquireEmptyOp",
    "AcquireFullOp",
    "Dataflow",
    "DrawEmptyOp",
    "DrawFullOp",
    "EntryOp",
    "PipelineOp",
    "QueueOp",
    "QueueType",
    "QueueWorkers",
    "QueueWorkersError",
    "ReleaseEmptyOp",
    "ReleaseFullOp",
    "Resource",
    "ResourceAttr",
    "StageOp",
    "drawn_acquires",
    "drawn_ticket_uses",
    "given_tickets",
    "queue_workers",
    "ticket_sources",
]
