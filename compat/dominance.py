"""xDSL 0.74 never checks dominance: a value used before its definition in the same block, or
in a block its definition does not dominate, verifies, and fails only in LLVM ("Instruction
does not dominate all uses!"), far from the source. `dominance_error` finds such a use, as
MLIR's verifier does.

Every value must dominate its uses: a use in the defining block comes after the definition
(block arguments come first); a use in a nested region counts at the op that holds the
region; a use in another block of the same region needs the defining block to dominate that
block in the region's control-flow graph (uses in unreachable blocks are not checked). Regions
of ops without terminators (`builtin.module`, `gpu.module`: graph regions) are not checked.
"""

from __future__ import annotations

from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region
from xdsl.traits import NoTerminator


class _Dominance:
    def __init__(self) -> None:
        self._positions: dict[Block, dict[Operation, int]] = {}
        self._dominators: dict[Region, dict[Block, set[Block]]] = {}

    def position(self, op: Operation) -> int:
        block = op.parent
        assert block is not None
        positions = self._positions.get(block)
        if positions is None:
            positions = {o: i for i, o in enumerate(block.ops)}
            self._positions[block] = positions
        return positions[op]

    def dominators(self, region: Region) -> dict[Block, set[Block]]:
        """Dominators of each block reachable from the entry (iterative data flow)."""
        found = self._dominators.get(region)
        if found is not None:
            return found
        entry = region.blocks.first
        reachable: list[Block] = []
        if entry is not None:
            seen = {entry}
            stack = [entry]
            while stack:
                block = stack.pop()
                reachable.append(block)
                last = block.last_op
                for successor in last.successors if last is not None else ():
                    if successor not in seen and successor.parent is region:
                        seen.add(successor)
                        stack.append(successor)
        everything = set(reachable)
        dominators = {b: ({b} if b is entry else set(everything)) for b in reachable}
        changed = True
        while changed:
            changed = False
            for block in reachable:
                if block is entry:
                    continue
                preds = [p for p in block.predecessors() if p in everything]
                new = set.intersection(*(dominators[p] for p in preds)) if preds else set()
                new = new | {block}
                if new != dominators[block]:
                    dominators[block] = new
                    changed = True
        self._dominators[region] = dominators
        return dominators


def _ancestor_in(op: Operation, region: Region) -> Operation | None:
    """`op` or its ancestor whose block is in `region`."""
    while op is not None:
        block = op.parent
        if block is not None and block.parent is region:
            return op
        op = op.parent_op()
    return None


def dominance_error(root: Operation) -> tuple[Operation, str] | None:
    """The first op under `root` (in walk order) with an operand whose definition does not
    dominate it, and why; None when every use is dominated."""
    dominance = _Dominance()
    for use in root.walk():
        for index, value in enumerate(use.operands):
            if isinstance(value, OpResult):
                definition: Operation | None = value.op
                block = definition.parent
            elif isinstance(value, BlockArgument):
                definition, block = None, value.block
            else:
                continue
            region = block.parent if block is not None else None
            if region is None or (region.parent is not None
                                  and region.parent.has_trait(NoTerminator)):
                continue
            user = _ancestor_in(use, region)
            what = f"operand #{index} of '{use.name}'"
            if user is None:
                return use, f"{what} is defined in a region that does not enclose this use"
            if user.parent is block:
                if definition is not None and (
                        definition is user
                        or dominance.position(definition) > dominance.position(user)):
                    return use, f"{what} is used before its definition"
                continue
            dominators = dominance.dominators(region).get(user.parent)
            if dominators is not None and block not in dominators:
                return use, f"{what} is defined in a block that does not dominate this use"
    return None
