"""xDSL 0.74's `op.verify()` re-runs the IRDL checks of each of thousands of identical ops,
and counts a region's blocks (a walk of its block list) at the terminator of each block;
`verify(op)` reports what it reports, checking each combination of class and types once and
counting each region's blocks once.

xDSL verifies an IRDL op by checking its operand and result types, properties and attributes
against its definition, its traits, and the op's own `verify_`. For most llvm-dialect ops all
of that is a function of (op class, operand types, result types, properties, attributes)
alone, and a lowered kernel has thousands of ops but a few hundred such combinations. `verify`
runs xDSL's structural checks of the whole tree (block and region structure, terminators,
erased operands) in xDSL's order and every other op's verification as is, but calls the IRDL
verification (`verify_`) of an op of a *context-free* class only for the first op of each
combination: the others would pass or fail exactly as that one did, and a failing one is the
first reported either way. In a function of a thousand blocks (an unrolled GEMM), xDSL's
block count at each terminator made the structural checks quadratic; here it is counted
once per region.

Context-free classes: IRDL ops without regions or successors whose traits verify nothing or
only compare the op's own types (`SameOperandsAndResultType`), and whose own `verify_` is
Operation's (none) or one of `_LOCAL_VERIFIERS`, checked to read only the op's properties and
operand/result types (xDSL 0.74). Any other op is verified by xDSL as usual.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import gpu, llvm
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, ErasedSSAValue, Operation, Region
from xdsl.irdl import IRDLOperation
from xdsl.traits import IsTerminator, NoTerminator, OpTrait, SameOperandsAndResultType
from xdsl.utils.exceptions import VerifyException

# Custom verifiers that read nothing but the op's properties and operand/result types.
_LOCAL_VERIFIERS: tuple[type[Operation], ...] = (llvm.CallIntrinsicOp, llvm.GEPOp, llvm.ICmpOp)
_LOCAL_TRAITS: tuple[type[OpTrait], ...] = (SameOperandsAndResultType,)

_context_free: dict[type[Operation], bool] = {}


def _own_verifier(cls: type[Operation]) -> Callable | None:
    """The class's own verify_ that xDSL's generated verify_ calls after the definition's
    checks (None when the class has none)."""
    generated = cls.verify_
    code = getattr(generated, "__code__", None)
    if code is None or generated.__closure__ is None:
        return generated
    cells = dict(zip(code.co_freevars, generated.__closure__, strict=True))
    custom = cells.get("custom_verify")
    return None if custom is None else custom.cell_contents


def is_context_free(cls: type[Operation]) -> bool:
    found = _context_free.get(cls)
    if found is None:
        found = _classify(cls)
        _context_free[cls] = found
    return found


def _classify(cls: type[Operation]) -> bool:
    if not issubclass(cls, IRDLOperation):
        return False
    definition = cls.get_irdl_definition()
    if definition.regions or definition.successors:
        return False
    for trait in definition.traits:
        if type(trait).verify is not OpTrait.verify and not isinstance(trait, _LOCAL_TRAITS):
            return False
    own = _own_verifier(cls)
    return own is None or own is Operation.verify_ or (
        cls in _LOCAL_VERIFIERS and own.__qualname__ == f"{cls.__name__}.verify_")


def _skip_verify_() -> None:
    return None


class BlockStructureError(VerifyException):
    """A block structure that xDSL 0.74's verifier lets through; `op` is where to report it."""

    def __init__(self, message: str, op: Operation):
        super().__init__(message)
        self.op = op


def verify(op: Operation) -> None:
    """`op.verify()`, with the IRDL verification of context-free ops memoized and each
    region's blocks counted once (plain `op.verify()` under `rewrite_driver.xdsl_drivers()`),
    after the checks of block structure xDSL 0.74 lacks."""
    from tilesync.compat.rewrite_driver import using_xdsl_drivers, walk_ops

    for inner in walk_ops(op):
        if isinstance(inner, gpu.FuncOp) and not inner.body.blocks:
            # xDSL's gpu.func verifier indexes its entry block
            name = _symbol(inner)
            which = f"@{name}" if name is not None else "without a name"
            raise VerifyException(f"'gpu.func' {which} has no body: a function needs an "
                                  f"entry block")
        if inner.regions:
            _check_empty_blocks(inner)
    if using_xdsl_drivers():
        op.verify()
        return
    _Verifier().verify_op(op)


def _symbol(op: Operation) -> str | None:
    """The op's symbol name: a property, or an attribute in the generic form; None where a
    malformed op lacks it."""
    name = op.properties.get("sym_name", op.attributes.get("sym_name"))
    return name.data if isinstance(name, StringAttr) else None


def _check_empty_blocks(op: Operation) -> None:
    """An empty block in a region of several blocks has no terminator either (MLIR refuses
    it; xDSL 0.74 checks only a lone block), and lowering it gave LLVM IR that LLVM refuses:
    reported at the branch to it, else at the op that holds it."""
    for region in op.regions:
        first = region.first_block
        if first is None or first.next_block is None or op.has_trait(NoTerminator):
            continue
        blocks = list(region.blocks)
        for index, block in enumerate(blocks):
            if block.first_op is not None:
                continue
            branches = [p.last_op for p in block.predecessors() if p.last_op is not None]
            name = _symbol(op)
            which = f"'{op.name}'" + (f" @{name}" if name is not None else "")
            raise BlockStructureError(
                f"block {index + 1} of the {len(blocks)} in {which} is empty: every block of "
                f"a region of several blocks ends in a terminator",
                branches[0] if branches else op)


class _Verifier:
    """xDSL 0.74's Operation.verify, Region.verify and Block.verify, with the same checks in
    the same order (an op's structure, then its regions, then its `verify_`)."""

    def __init__(self) -> None:
        self.seen: set[tuple] = set()  # combinations whose IRDL verification passed
        self.block_counts: dict[Region, int] = {}

    def verify_op(self, op: Operation) -> None:
        cls = type(op)
        if cls.verify is not Operation.verify:  # checks of its own before Operation.verify's
            self._verify_overridden(op)
            return
        for operand in op.operands:
            if isinstance(operand, ErasedSSAValue):
                raise ValueError("Erased SSA value is used by the operation")
        parent_block = op.parent
        parent_region = None if parent_block is None else parent_block.parent
        if op.successors:
            if parent_block is None or parent_region is None:
                raise VerifyException(f"Operation {op.name} with block successors does not "
                                      "belong to a block or a region")
            if parent_block.last_op is not op:
                raise VerifyException(f"Operation {op.name} with block successors must "
                                      "terminate its parent block")
            for successor in op.successors:
                if successor.parent != parent_region:
                    raise VerifyException(f"Operation {op.name} is branching to a block of a "
                                          "different region")
        if parent_block is not None and parent_region is not None \
                and parent_block.last_op is op:
            self._check_terminator(op, parent_region)
        for region in op.regions:
            self._verify_region(region)
        key = self._key(op)
        if key is not None and key in self.seen:
            return
        try:
            op.verify_()
        except VerifyException as err:
            op.emit_error(f"Operation does not verify: {err}", err)
        if key is not None:
            self.seen.add(key)

    def _verify_overridden(self, op: Operation) -> None:
        """`op.verify()` of a class that overrides it (llvm.trunc, zext, sext: a width check,
        then Operation.verify), its `verify_` skipped for a combination already checked."""
        key = self._key(op)
        if key is None or key not in self.seen:
            op.verify()
            if key is not None:
                self.seen.add(key)
            return
        op.__dict__["verify_"] = _skip_verify_  # Operation.verify calls self.verify_()
        try:
            op.verify()
        finally:
            del op.__dict__["verify_"]

    @staticmethod
    def _key(op: Operation) -> tuple | None:
        """What the IRDL verification of a context-free op depends on (None: not one)."""
        cls = type(op)
        if op.regions or not is_context_free(cls):
            return None
        return (cls, tuple(v.type for v in op.operands), tuple(r.type for r in op.results),
                frozenset(op.properties.items()), frozenset(op.attributes.items()))

    def _check_terminator(self, op: Operation, region: Region) -> None:
        """xDSL's check of the last op of a block: a terminator where its region's parent
        needs one (any region of several blocks does)."""
        blocks = self._block_count(region)
        if blocks == 1:
            parent_op = region.parent
            if parent_op is not None and not parent_op.has_trait(NoTerminator) \
                    and not op.has_trait(IsTerminator):
                raise VerifyException(f"Operation {op.name} terminates block in single-block "
                                      "region but is not a terminator")
        elif blocks > 1 and not op.has_trait(IsTerminator):
            raise VerifyException(f"Operation {op.name} terminates block in multi-block region "
                                  "but is not a terminator")

    def _block_count(self, region: Region) -> int:
        count = self.block_counts.get(region)
        if count is None:
            count = self.block_counts[region] = len(region.blocks)
        return count

    def _verify_region(self, region: Region) -> None:
        for block in region.blocks:
            self._verify_block(block)
            if block.parent != region:
                raise ValueError("Parent pointer of block does not refer to containing region")

    def _verify_block(self, block: Block) -> None:
        empty = True
        for op in block.ops:
            empty = False
            if op.parent != block:
                raise ValueError("Parent pointer of operation does not refer to containing "
                                 "region")
            self.verify_op(op)
        if empty and (region := block.parent) is not None \
                and (parent_op := region.parent) is not None \
                and self._block_count(region) == 1 and not parent_op.has_trait(NoTerminator):
            raise VerifyException(f"Operation {parent_op.name} contains empty block in "
                                  "single-block region that expects at least a terminator")


