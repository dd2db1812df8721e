"""xDSL 0.74's `gpu` ops print and parse only the generic form; this gives them upstream
MLIR's custom assembly syntax.

`install_gpu_syntax()` attaches `parse`
(classmethod) and `print` methods to xDSL's own op classes, so `isinstance(op, gpu.FuncOp)`
and `gpu.ThreadIdOp(gpu.DimensionAttr("x"))` keep working and print the custom form. The
generic form still parses. Installed on import of this module (and so whenever
`tilesync.dialects` is imported).

Supported (as upstream MLIR prints it):

    gpu.module @name [#target, ...]? (attributes {...})? { body }
    gpu.func @name(%a: t {arg attrs}?, ...) (-> t | -> (t {res attrs}?, ...))? kernel?
        (attributes {...})? { body }
    %0 = gpu.thread_id x (upper_bound 256)? {attr-dict}?   (block_id, block_dim, grid_dim,
                                                           global_id: same)
    %0 = gpu.lane_id (upper_bound 32)?          (subgroup_id, num_subgroups, subgroup_size)
    gpu.barrier
    gpu.return (%v, ... : t, ...)?     gpu.yield (%v, ... : t, ...)?     gpu.terminator

Not supported (clear parse error): `workgroup(...)` / `private(...)` attributions of
gpu.func (xDSL's gpu.func has no such arguments) and gpu.module's `<offloading handler>`.
The `upper_bound`, gpu.module `targets` and gpu.func `arg_attrs` / `res_attrs` are kept as
discardable attributes (xDSL's ops have no such properties).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import gpu
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
)
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer

_DIMENSIONS = ("x", "y", "z")
_UPPER_BOUND = "upper_bound"


# --------------------------------------------------------------------------- helpers


def _parse_attr_dict(parser: Parser, op: IRDLOperation, reserved: Sequence[str] = ()) -> None:
    attrs = parser.parse_optional_attr_dict()
    for name in reserved:
        if name in attrs:
            parser.raise_error(f"'{name}' is not allowed in the attribute dictionary of {op.name}")
    op.attributes |= attrs


def _parse_upper_bound(parser: Parser) -> IntegerAttr | None:
    if parser.parse_optional_keyword(_UPPER_BOUND) is None:
        return None
    return IntegerAttr(parser.parse_integer(allow_boolean=False), IndexType())


def _print_upper_bound_and_attrs(printer: Printer, op: IRDLOperation) -> None:
    bound = op.attributes.get(_UPPER_BOUND)
    reserved: tuple[str, ...] = ()
    if isinstance(bound, IntegerAttr) and isinstance(bound.type, IndexType):
        printer.print_string(f" {_UPPER_BOUND} {bound.value.data}")
        reserved = (_UPPER_BOUND,)
    printer.print_op_attributes(op.attributes, reserved_attr_names=reserved)


def _finish_index_op(parser: Parser, op: IRDLOperation) -> None:
    bound = _parse_upper_bound(parser)
    _parse_attr_dict(parser, op, (_UPPER_BOUND,) if bound is not None else ())
    if bound is not None:
        op.attributes[_UPPER_BOUND] = bound


# ----------------------------------------------------- dimension ops (thread_id x, ...)


def _parse_dimension_op(cls: type[IRDLOperation], parser: Parser) -> IRDLOperation:
    pos = parser.pos
    dim = parser.parse_optional_keyword_in(_DIMENSIONS)
    if dim is None:
        parser.raise_error(
            f"{cls.name} expects a dimension: one of 'x', 'y' or 'z'", pos, parser.pos
        )
    op = cls(gpu.DimensionAttr(gpu.DimensionEnum(dim)))  # pyright: ignore[reportCallIssue]
    _finish_index_op(parser, op)
    return op


def _print_dimension_op(self: IRDLOperation, printer: Printer) -> None:
    dim = self.properties["dimension"]
    assert isinstance(dim, gpu.DimensionAttr)
    printer.print_string(f" {dim.data!s}")
    _print_upper_bound_and_attrs(printer, self)


# ----------------------------------------------- no-operand index ops (lane_id, ...)


def _parse_index_op(cls: type[IRDLOperation], parser: Parser) -> IRDLOperation:
    op = cls()  # pyright: ignore[reportCallIssue]
    _finish_index_op(parser, op)
    return op


def _print_index_op(self: IRDLOperation, printer: Printer) -> None:
    _print_upper_bound_and_attrs(printer, self)


# ------------------------------------------------------- barrier, terminator


def _parse_bare_op(cls: type[IRDLOperation], parser: Parser) -> IRDLOperation:
    op = cls()  # pyright: ignore[reportCallIssue]
    _parse_attr_dict(parser, op)
    return op


def _print_bare_op(self: IRDLOperation, printer: Printer) -> None:
    printer.print_op_attributes(self.attributes)


# -------------------------------------------------- return, yield: `%a, %b : t, u`


def _parse_values_op(cls: type[IRDLOperation], parser: Parser) -> IRDLOperation:
    attrs = parser.parse_optional_attr_dict()
    pos = parser.pos
    unresolved = parser.parse_optional_undelimited_comma_separated_list(
        parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
    )
    values = []
    if unresolved:
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        values = parser.resolve_operands(unresolved, types, pos)
    op = cls(values)  # pyright: ignore[reportCallIssue]
    op.attributes |= attrs
    return op


def _print_values_op(self: IRDLOperation, printer: Printer) -> None:
    printer.print_op_attributes(self.attributes)
    if self.operands:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(" : ")
        printer.print_list(self.operand_types, printer.print_attribute)


# ---------------------------------------------------------------------- gpu.module


_MODULE_TARGETS = "targets"


def _parse_module(cls: type[gpu.ModuleOp], parser: Parser) -> gpu.ModuleOp:
    name = parser.parse_symbol_name()
    if parser.parse_optional_punctuation("<") is not None:
        parser.raise_error("gpu.module offloading handlers (`<...>`) are not supported")
    targets = parser.parse_optional_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_attribute
    )
    attrs = parser.parse_optional_attr_dict_with_keyword(("sym_name",))
    region = parser.parse_region()
    if not region.blocks:
        region.add_block(Block())
    op = cls(name, region)  # pyright: ignore[reportArgumentType]
    if attrs is not None:
        if targets is not None and _MODULE_TARGETS in attrs.data:
            parser.raise_error("gpu.module has both `[targets]` and a 'targets' attribute")
        op.attributes |= attrs.data
    if targets is not None:
        op.attributes[_MODULE_TARGETS] = ArrayAttr(targets)
    return op


def _print_module(self: gpu.ModuleOp, printer: Printer) -> None:
    printer.print_string(" ")
    printer.print_symbol_name(self.sym_name.data)
    reserved = ["sym_name"]
    targets = self.attributes.get(_MODULE_TARGETS)
    if isinstance(targets, ArrayAttr) and targets.data:
        printer.print_string(" [")
        printer.print_list(targets.data, printer.print_attribute)
        printer.print_string("]")
        reserved.append(_MODULE_TARGETS)
    printer.print_op_attributes(self.attributes, reserved_attr_names=reserved, print_keyword=True)
    printer.print_string(" ")
    printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)


# ------------------------------------------------------------------------ gpu.func

_ARG_ATTRS = "arg_attrs"
_RES_ATTRS = "res_attrs"
_FUNC_RESERVED = ("sym_name", "function_type", "kernel", _ARG_ATTRS, _RES_ATTRS)


def _parse_func_results(parser: Parser) -> tuple[list[Attribute], list[dict[str, Attribute]]]:
    if parser.parse_optional_punctuation("->") is None:
        return [], []
    results = parser.parse_optional_comma_separated_list(
        parser.Delimiter.PAREN,
        lambda: (parser.parse_type(), parser.parse_optional_dictionary_attr_dict()),
    )
    if results is None:
        return [parser.parse_type()], [{}]
    return [t for t, _ in results], [a for _, a in results]


def _parse_func(cls: type[gpu.FuncOp], parser: Parser) -> gpu.FuncOp:
    name = parser.parse_symbol_name().data

    def parse_arg() -> tuple[Parser.Argument | Attribute, dict[str, Attribute]]:
        arg = parser.parse_optional_argument()
        item: Parser.Argument | Attribute = arg if arg is not None else parser.parse_type()
        return item, parser.parse_optional_dictionary_attr_dict()

    pos = parser.pos
    raw_args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_arg)
    named = [a for a, _ in raw_args if isinstance(a, Parser.Argument)]
    if named and len(named) != len(raw_args):
        parser.raise_error("gpu.func arguments must be all named or all unnamed", pos, parser.pos)
    input_types = [a.type if isinstance(a, Parser.Argument) else a for a, _ in raw_args]
    arg_attrs = [d for _, d in raw_args]
    result_types, res_attrs = _parse_func_results(parser)

    for keyword in ("workgroup", "private"):
        kw_pos = parser.pos
        if parser.parse_optional_keyword(keyword) is not None:
            parser.raise_error(
                f"gpu.func `{keyword}(...)` attributions are not supported by tilesync "
                "(xDSL's gpu.func has no attribution arguments)",
                kw_pos,
                parser.pos,
            )
    kernel = parser.parse_optional_keyword("kernel") is not None
    attrs = parser.parse_optional_attr_dict_with_keyword(_FUNC_RESERVED)

    entry_args = named if named else ([] if not raw_args else None)
    region = parser.parse_optional_region(entry_args)
    if region is None:
        if named:
            parser.raise_error("expected the body of gpu.func (named arguments given)")
        region = Region()

    op = cls(name, (input_types, result_types), region, kernel=kernel or None)
    if attrs is not None:
        op.attributes |= attrs.data
    if any(arg_attrs):
        op.attributes[_ARG_ATTRS] = ArrayAttr(DictionaryAttr(d) for d in arg_attrs)
    if any(res_attrs):
        op.attributes[_RES_ATTRS] = ArrayAttr(DictionaryAttr(d) for d in res_attrs)
    return op


def _attr_dicts(attr: Attribute | None, count: int) -> list[dict[str, Attribute]] | None:
    """The list of `count` attribute dicts in `attr`, or None when it is not such a list."""
    if attr is None:
        return [{} for _ in range(count)]
    if (
        isinstance(attr, ArrayAttr)
        and len(attr.data) == count
        and all(isinstance(d, DictionaryAttr) for d in attr.data)
    ):
        return [dict(d.data) for d in attr.data]  # pyright: ignore
    return None


def _print_func(self: gpu.FuncOp, printer: Printer) -> None:
    ftype = self.function_type
    assert isinstance(ftype, FunctionType)
    inputs, outputs = ftype.inputs.data, ftype.outputs.data
    reserved = ["sym_name"]
    arg_attrs = _attr_dicts(self.attributes.get(_ARG_ATTRS), len(inputs))
    res_attrs = _attr_dicts(self.attributes.get(_RES_ATTRS), len(outputs))
    if arg_attrs is None:  # malformed: keep them in the attribute dictionary
        arg_attrs = [{} for _ in inputs]
    else:
        reserved.append(_ARG_ATTRS)
    if res_attrs is None:
        res_attrs = [{} for _ in outputs]
    else:
        reserved.append(_RES_ATTRS)

    printer.print_string(" ")
    printer.print_symbol_name(self.sym_name.data)
    printer.print_string("(")
    has_body = bool(self.body.blocks)
    block_args = self.body.blocks[0].args if has_body else ()
    if has_body and len(block_args) != len(inputs):
        has_body = False  # invalid op; still print the signature faithfully
    for i, ty in enumerate(inputs):
        if i:
            printer.print_string(", ")
        if has_body:
            printer.print_block_argument(block_args[i], print_type=False)
            printer.print_string(": ")
        printer.print_attribute(ty)
        if arg_attrs[i]:
            printer.print_op_attributes(arg_attrs[i])
    printer.print_string(")")

    if outputs:
        printer.print_string(" -> ")
        if len(outputs) == 1 and not res_attrs[0] and not isinstance(outputs[0], FunctionType):
            printer.print_attribute(outputs[0])
        else:
            printer.print_string("(")
            for i, ty in enumerate(outputs):
                if i:
                    printer.print_string(", ")
                printer.print_attribute(ty)
                if res_attrs[i]:
                    printer.print_op_attributes(res_attrs[i])
            printer.print_string(")")

    if self.kernel is not None:
        printer.print_string(" kernel")
    printer.print_op_attributes(self.attributes, reserved_attr_names=reserved, print_keyword=True)
    if self.body.blocks:
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=not has_body)


# ---------------------------------------------------------------------------- install

_INSTALLED = False


def _attach(cls: type, parse, print_) -> None:
    def parse_method(klass, parser):
        return parse(klass, parser)

    def print_method(self, printer):
        print_(self, printer)

    parse_method.__qualname__ = f"{cls.__name__}.parse"
    print_method.__qualname__ = f"{cls.__name__}.print"
    cls.parse = classmethod(parse_method)  # pyright: ignore[reportAttributeAccessIssue]
    cls.print = print_method  # pyright: ignore[reportAttributeAccessIssue]


def install_gpu_syntax() -> None:
    """Attach upstream MLIR custom syntax to xDSL's gpu op classes (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    for cls in (gpu.ThreadIdOp, gpu.BlockIdOp, gpu.BlockDimOp, gpu.GridDimOp, gpu.GlobalIdOp):
        _attach(cls, _parse_dimension_op, _print_dimension_op)
    for cls in (gpu.LaneIdOp, gpu.SubgroupIdOp, gpu.NumSubgroupsOp, gpu.SubgroupSizeOp):
        _attach(cls, _parse_index_op, _print_index_op)
    for cls in (gpu.BarrierOp, gpu.TerminatorOp):
        _attach(cls, _parse_bare_op, _print_bare_op)
    for cls in (gpu.ReturnOp, gpu.YieldOp):
        _attach(cls, _parse_values_op, _print_values_op)
    _attach(gpu.ModuleOp, _parse_module, _print_module)
    _attach(gpu.FuncOp, _parse_func, _print_func)
    _INSTALLED = True


install_gpu_syntax()

__all__ = ["install_gpu_syntax"]
