"""Stage kernels whose bodies are one code but for constants: what a persistent kernel emits once.

A pipeline's stages often run the same layer code: NeRF's trunk has five 256 -> 256 stages whose
lowered bodies differ only in their queues' depths (the divisor of a ticket's entry and round),
the queue ids a timed-out spin records, and which shared-memory word hands tickets out. Emitting
such stages once, with the differing constants and parameters chosen by the CTA's stage at run
time, compiles a fraction of the IR (every later pass, LLVM and ptxas).

`same_code(rep, other)` walks both bodies in step and says whether they are the same code: the
same ops with the same attributes, types and operand structure, where

- an `arith.constant` may hold another value of its type (recorded: the caller selects it),
  unless it bounds a loop: a trip count known when compiling is what LLVM unrolls and
  software-pipelines, so stages whose loops differ keep their own code;
- a `memref.get_global` may name another global, when both are uninitialized, non-constant
  shared-memory buffers of one type and the renaming is one-to-one: shared memory is a CTA's
  own, and a CTA of the persistent kernel runs one stage only, so stages may share a buffer
  that plays the same part in each;
- the kernels' parameters correspond by position (the caller passes each stage its own).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import MemRefType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tilesync.dialects.tile import SHARED_SPACE, memory_space


def is_cta_scratch(global_op: memref.GlobalOp | None) -> bool:
    """An uninitialized, writable shared-memory global: each CTA's own words."""
    return (isinstance(global_op, memref.GlobalOp) and isinstance(global_op.type, MemRefType)
            and memory_space(global_op.type) == SHARED_SPACE
            and isinstance(global_op.initial_value, UnitAttr) and global_op.constant is None)


class _Walk:
    def __init__(self, lookup_global: Callable[[str], memref.GlobalOp | None]):
        self.lookup_global = lookup_global
        self.values: dict[SSAValue, SSAValue] = {}  # other's value -> rep's
        self.renamed: dict[str, str] = {}  # other's global -> rep's
        self.taken: dict[str, str] = {}  # rep's global -> other's
        self.constants: dict[arith.ConstantOp, Attribute] = {}

    def blocks(self, rep: Block, other: Block) -> bool:
        if [a.type for a in rep.args] != [a.type for a in other.args]:
            return False
        self.values.update(zip(other.args, rep.args, strict=True))
        rep_op, other_op = rep.first_op, other.first_op
        while rep_op is not None and other_op is not None:
            if not self.ops(rep_op, other_op):
                return False
            rep_op, other_op = rep_op.next_op, other_op.next_op
        return rep_op is None and other_op is None

    def ops(self, rep: Operation, other: Operation) -> bool:
        if (rep.name != other.name or len(rep.operands) != len(other.operands)
                or len(rep.results) != len(other.results)
                or len(rep.regions) != len(other.regions)
                or rep.successors or other.successors
                or any(self.values.get(o) is not r
                       for r, o in zip(rep.operands, other.operands, strict=True))
                or any(r.type != o.type for r, o in zip(rep.results, other.results, strict=True))
                or rep.attributes != other.attributes):
            return False
        if isinstance(rep, arith.ConstantOp):
            assert isinstance(other, arith.ConstantOp)
            if rep.value != other.value:
                self.constants[rep] = other.value
        elif isinstance(rep, memref.GetGlobalOp):
            assert isinstance(other, memref.GetGlobalOp)
            if not self.globals(rep.name_.string_value(), other.name_.string_value()):
                return False
        elif rep.properties != other.properties:
            return False
        for rep_region, other_region in zip(rep.regions, other.regions, strict=True):
            if len(rep_region.blocks) != len(other_region.blocks):
                return False
            for rep_block, other_block in zip(rep_region.blocks, other_region.blocks,
                                              strict=True):
                if not self.blocks(rep_block, other_block):
                    return False
        self.values.update(zip(other.results, rep.results, strict=True))
        return True

    def globals(self, rep: str, other: str) -> bool:
        if self.renamed.get(other, rep) != rep or self.taken.get(rep, other) != other:
            return False
        if rep != other:
            rep_global, other_global = self.lookup_global(rep), self.lookup_global(other)
            if not (is_cta_scratch(rep_global) and is_cta_scratch(other_global)
                    and rep_global.properties == {**other_global.properties,
                                                  "sym_name": rep_global.sym_name}):
                return False
        self.renamed[other], self.taken[rep] = rep, other
        return True


def same_code(rep: gpu.FuncOp, other: gpu.FuncOp,
              lookup_global: Callable[[str], memref.GlobalOp | None]
              ) -> dict[arith.ConstantOp, Attribute] | None:
    """None where `other`'s body is not `rep`'s code (see the module docstring); else, for each
    constant of `rep` that `other` holds at another value, `other`'s value."""
    if rep.function_type != other.function_type or len(rep.body.blocks) != 1 \
            or len(other.body.blocks) != 1:
        return None
    walk = _Walk(lookup_global)
    if not walk.blocks(rep.body.blocks.first, other.body.blocks.first):
        return None
    if any(isinstance(use.operation, scf.ForOp) for const in walk.constants
           for use in const.result.uses):
        return None
    return walk.constants


__all__ = ["is_cta_scratch", "same_code"]
