"""LLVM IR → PTX through llvmlite's NVPTX backend, and PTX validation through nvJitLink.

module_to_ptx(op, arch)        llvm-dialect module → PTX (translate, then llvm_ir_to_ptx)
llvm_ir_to_ptx(ir, arch, opt)  parse, verify, optimize, emit PTX, reject leftover llvm.* calls
validate_ptx(ptx, arch)        compile the PTX with nvJitLink (no GPU needed) → PTXInfo
list_kernels(ptx)              names of the `.entry` functions
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

import llvmlite.binding as llvm
from xdsl.ir import Operation

from tilesync.contract import ARCHITECTURES, TARGETS
from tilesync.lowering.llvm_to_llvmlite import (
    NVPTX_DATA_LAYOUT,
    NVPTX_TRIPLE,
    translate_to_llvm_ir,
)

SUPPORTED_ARCHS = TARGETS


class PTXError(Exception):
    """PTX generation or validation failed; the message carries LLVM's or nvJitLink's log."""


@dataclass(frozen=True)
class PTXInfo:
    """What nvJitLink reported while compiling PTX for one architecture."""

    arch: str
    info_log: str
    registers: dict[str, int] = field(default_factory=dict)
    """Registers per thread of each kernel, where the log reports them."""
    shared_bytes: dict[str, int] = field(default_factory=dict)
    """Static shared memory per block of each kernel, where the log reports it."""
    stack_bytes: dict[str, int] = field(default_factory=dict)
    """The stack frame of each kernel (where spilled registers live), from the summary."""
    spill_bytes: dict[str, int] = field(default_factory=dict)
    """Spill stores plus loads of each kernel, where the log has ptxas's lines (nvJitLink
    leaves them out when it does not run ptxas again for PTX it has compiled before)."""

    def spill_free(self, kernel: str) -> bool:
        """No register spills in `kernel`: ptxas's 0 bytes of spill stores and loads, or,
        with only the summary, an empty stack frame. KeyError if the log has no summary of
        `kernel`."""
        stack = self.stack_bytes[kernel]
        return self.spill_bytes.get(kernel, stack) == 0


def _check_arch(arch: str) -> None:
    if arch not in ARCHITECTURES:
        raise PTXError(
            f"unsupported GPU architecture '{arch}'; valid ones: {', '.join(SUPPORTED_ARCHS)}"
        )


@cache
def _initialize_llvm() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


@cache
def _target_machine(arch: str, opt_level: int) -> llvm.TargetMachine:
    _initialize_llvm()
    target = llvm.Target.from_triple(NVPTX_TRIPLE)
    return target.create_target_machine(
        cpu=arch, features=ARCHITECTURES[arch].ptx_features, opt=opt_level
    )


# LLVM aborts the whole process (report_fatal_error) on these; catch them beforehand.
_CLUSTER_SCOPE = re.compile(r'syncscope\("cluster"\)')
_CALL_TO_LLVM_SYMBOL = re.compile(r"\bcall\b[^;]*?\b(llvm\.[\w.$]+)")
_LLVM_SYMBOL_DECL = re.compile(r"\.extern\s+\.func[^;]*?\b(llvm\.[\w.$]+)")


def _reject_fatal_constructs(llvm_ir: str, arch: str) -> None:
    if arch == "sm_80" and _CLUSTER_SCOPE.search(llvm_ir):
        raise PTXError('syncscope("cluster") needs sm_90 or newer; the target is sm_80')


def _optimize(module: llvm.ModuleRef, target_machine: llvm.TargetMachine, opt_level: int) -> None:
    if opt_level == 0:
        return
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pass_builder = llvm.create_pass_builder(target_machine, tuning)
    pass_builder.getModulePassManager().run(module, pass_builder)


def llvm_ir_to_ptx(llvm_ir: str, arch: str = "sm_90", opt_level: int = 3) -> str:
    """Compile textual LLVM IR for the NVPTX target to PTX assembly.

    Raises PTXError for an unsupported arch, IR that does not parse or verify, and PTX that
    still calls an `llvm.*` symbol (a misspelled or mistyped intrinsic becomes an external
    call that would only fail when the module is loaded).
    """
    _check_arch(arch)
    if not 0 <= opt_level <= 3:
        raise PTXError(f"opt_level must be 0..3, got {opt_level}")
    _reject_fatal_constructs(llvm_ir, arch)
    target_machine = _target_machine(arch, opt_level)
    # The data layout must be known before parsing, or i64 accesses get split.
    if "target datalayout" not in llvm_ir:
        llvm_ir = f'target datalayout = "{NVPTX_DATA_LAYOUT}"\n{llvm_ir}'
    try:
        module = llvm.parse_assembly(llvm_ir)
        module.triple = NVPTX_TRIPLE
        module.data_layout = str(target_machine.target_data)
        module.verify()
    except RuntimeError as error:
        raise PTXError(f"invalid LLVM IR: {error}") from error
    _optimize(module, target_machine, opt_level)
    ptx = target_machine.emit_assembly(module)
    _reject_llvm_calls(ptx)
    return ptx


def _reject_llvm_calls(ptx: str) -> None:
    for pattern in (_LLVM_SYMBOL_DECL, _CALL_TO_LLVM_SYMBOL):
        match = pattern.search(ptx)
        if match:
            symbol = next(group for group in match.groups() if group)
            raise PTXError(
                f"PTX calls the unresolved symbol '{symbol}': the intrinsic is misspelled "
                "or has a signature the NVPTX backend does not know"
            )


def list_kernels(ptx: str) -> list[str]:
    """Names of the kernels (`.entry` functions) defined in the PTX, in order."""
    return re.findall(r"\.entry\s+([\w$.]+)\s*\(", ptx)


# nvJitLink's summary of each kernel, in every log:
#   info    : Function properties for 'k':
#   info    : used 64 registers, used 5 barriers, 0 stack, 1024 bytes smem, ..., 0 bytes lmem
_SUMMARY = re.compile(r"Function properties for '([^']+)':\s*\n[^\n]*?used (\d+) registers"
                      r"[^\n]*?(\d+) stack, (\d+) bytes smem")
# ptxas's lines, where it ran: `Function properties for k` then `... N bytes spill stores, M
# bytes spill loads`
_PTXAS_SPILLS = re.compile(r"Function properties for ([^'\s:]+)\s*\n[^\n]*?(\d+) bytes spill "
                           r"stores, (\d+) bytes spill loads")


def _summaries(info_log: str) -> dict[str, tuple[int, int, int]]:
    """Registers, stack bytes and shared bytes of each kernel the log summarizes."""
    return {name: (int(registers), int(stack), int(shared))
            for name, registers, stack, shared in _SUMMARY.findall(info_log)}


def ptx_info_from_log(arch: str, info_log: str) -> PTXInfo:
    summaries = _summaries(info_log)
    return PTXInfo(arch=arch, info_log=info_log,
                   registers={k: v[0] for k, v in summaries.items()},
                   shared_bytes={k: v[2] for k, v in summaries.items()},
                   stack_bytes={k: v[1] for k, v in summaries.items()},
                   spill_bytes={name: int(stores) + int(loads)
                                for name, stores, loads in _PTXAS_SPILLS.findall(info_log)})


def validate_ptx(ptx: str, arch: str = "sm_90") -> PTXInfo:
    """Compile PTX to SASS with nvJitLink (works without a GPU); raise PTXError on failure."""
    _check_arch(arch)
    from cuda.bindings import nvjitlink

    options = [f"-arch={arch}", "-verbose"]
    handle = nvjitlink.create(len(options), options)
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "tilesync.ptx")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as error:
            raise PTXError(
                f"nvJitLink rejected the PTX for {arch}: {error}\n{_error_log(handle)}"
            ) from error
        info_log = _info_log(handle)
    finally:
        nvjitlink.destroy(handle)
    return ptx_info_from_log(arch, info_log)


def _read_log(size: int, read) -> str:
    if size <= 1:
        return ""
    buffer = bytearray(size)
    read(buffer)
    return buffer.rstrip(b"\0").decode(errors="replace")


def _error_log(handle: int) -> str:
    from cuda.bindings import nvjitlink

    size = nvjitlink.get_error_log_size(handle)
    return _read_log(size, lambda buf: nvjitlink.get_error_log(handle, buf))


def _info_log(handle: int) -> str:
    from cuda.bindings import nvjitlink

    size = nvjitlink.get_info_log_size(handle)
    return _read_log(size, lambda buf: nvjitlink.get_info_log(handle, buf))


def module_to_ptx(op: Operation, arch: str = "sm_90", opt_level: int = 3) -> str:
    """Translate an llvm-dialect module (builtin.module or gpu.module) and compile it to PTX."""
    return llvm_ir_to_ptx(translate_to_llvm_ir(op), arch, opt_level)
