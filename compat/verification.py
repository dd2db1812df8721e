"""xDSL 0.74's `op.verify()` re-runs the IRDL checks of each of thousands of identical ops;
`verify(op)` reports what it reports, checking each combination of class and types once.

xDSL verifies an IRDL op by checking its operand and result types, properties and attributes
against its definition, its traits, and the op's own `verify_`. For most llvm-dialect ops all
of that is a function of (op class, operand types, result types, properties, attributes)
alone, and a lowered kernel has thousands of ops but a few hundred such combinations. `verify`
runs xDSL's verification of the whole tree (block and region structure, terminators, erased
operands, every op of every other kind) as is, but calls the IRDL verification (`verify_`) of
an op of a *context-free* class only for the first op of each combination: the others would
pass or fail exactly as that one did, and a failing one is the first reported either way.

Context-free classes: IRDL ops without regions or successors whose traits verify nothing or
only compare the op's own types (`SameOperandsAndResultType`), and whose own `verify_` is
Operation's (none) or one of `_LOCAL_VERIFIERS`, checked to read only the op's properties and
operand/result types (xDSL 0.74). Any other op is verified by xDSL as usual.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import gpu, llvm
from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation
from xdsl.traits import OpTrait, SameOperandsAndResultType
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


def verify(op: Operation) -> None:
    """`op.verify()`, with the IRDL verification of context-free ops memoized (plain
    `op.verify()` under `rewrite_driver.xdsl_drivers()`)."""
    from tilesync.compat.rewrite_driver import using_xdsl_drivers

    for inner in op.walk():  # xDSL's gpu.func verifier indexes its entry block
        if isinstance(inner, gpu.FuncOp) and not inner.body.blocks:
            raise VerifyException(f"'gpu.func' @{inner.sym_name.data} has no body: a function "
                                  f"needs an entry block")
    if using_xdsl_drivers():
        op.verify()
        return
    seen: set[tuple] = set()
    shadowed: list[Operation] = []
    try:
        for inner in op.walk():
            cls = type(inner)
            if inner.regions or not is_context_free(cls):
                continue
            key = (cls, tuple(v.type for v in inner.operands),
                   tuple(r.type for r in inner.results),
                   frozenset(inner.properties.items()), frozenset(inner.attributes.items()))
            if key in seen:
                # Operation.verify calls self.verify_(): this instance skips it.
                inner.__dict__["verify_"] = _skip_verify_
                shadowed.append(inner)
            else:
                seen.add(key)
        op.verify()
    finally:
        for inner in shadowed:
            del inner.__dict__["verify_"]
