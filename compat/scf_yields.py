"""xDSL 0.74's `scf.if` checks neither that a region yields the op's results nor that an op
with results has an else region: `scf.if %c -> (index) { }` parses (the parser adds an empty
`scf.yield`) and verifies, and fails only while lowering ("zip() argument 2 is longer than
argument 1" in convert-cf-to-llvm). `if_yield_error` finds such an op, as MLIR's verifier
does."""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Operation


def _types(types) -> str:
    return ", ".join(str(t) for t in types)


def if_yield_error(root: Operation) -> tuple[Operation, str] | None:
    """The first `scf.if` under `root` (in walk order) whose regions do not yield its result
    types, and why; None when every one does."""
    for op in root.walk():
        if not isinstance(op, scf.IfOp):
            continue
        results = list(op.output.types)
        for name, region in (("then", op.true_region), ("else", op.false_region)):
            if not region.blocks:
                if results:
                    return op, (f"'scf.if' with results ({_types(results)}) needs an else "
                                f"region that yields them")
                continue
            last = region.blocks.last.last_op if region.blocks.last is not None else None
            yielded = [v.type for v in last.operands] if isinstance(last, scf.YieldOp) else None
            if yielded != results:
                got = "no scf.yield" if yielded is None else f"({_types(yielded)})"
                return op, (f"'scf.if' {name} region yields {got}, the op's results are "
                            f"({_types(results)})")
    return None
