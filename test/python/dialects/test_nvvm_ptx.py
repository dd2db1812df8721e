"""nvvm ops through convert-nvvm-to-llvm, llvmlite's NVPTX backend and ptxas.

Each case builds one nvvm op with the Python API, lowers it, writes the llvm ops as LLVM IR
(a small printer for llvm.call_intrinsic / llvm.inline_asm only), compiles that to PTX with
llvmlite, checks the instruction is in the PTX and nothing named `llvm.` is left, and assembles
the PTX with ptxas for sm_90 (and sm_80 where the instruction exists there). Without ptxas the
assembler step is skipped; without llvmlite the whole module is.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    Float32Type,
    IntAttr,
    IntegerType,
    ModuleOp,
    NoneAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from tilesync.dialects import nvvm
from tilesync.dialects.llvmx import address_space
from tilesync.lowering.nvvm_to_llvm import PTX_TEMPLATES, ConvertNVVMToLLVMPass, ptx_string

binding = pytest.importorskip("llvmlite.binding")

PTXAS = shutil.which("ptxas")


def _ptr(space: int | None) -> llvm.LLVMPointerType:
    return llvm.LLVMPointerType(NoneAttr() if space is None else IntAttr(space))


# Kernel arguments every case may use: global, shared and generic pointers, i32, i64, f32.
ARG_TYPES: list[Attribute] = [_ptr(1), _ptr(3), _ptr(None), i32, i64, f32]
G, S, P, I, L, F = range(6)

Builder = Callable[[list[SSAValue]], Operation]

# (id, builder, exists on sm_80)
CASES: list[tuple[str, Builder, bool]] = [
    ("sreg_tid_x", lambda a: nvvm.read_sreg("tid.x"), True),
    ("sreg_ctaid_z", lambda a: nvvm.read_sreg("ctaid.z"), True),
    ("sreg_nctaid_y", lambda a: nvvm.read_sreg("nctaid.y"), True),
    ("sreg_ntid_x", lambda a: nvvm.read_sreg("ntid.x"), True),
    ("sreg_laneid", lambda a: nvvm.read_sreg("laneid"), True),
    ("sreg_warpid", lambda a: nvvm.read_sreg("warpid"), True),
    ("sreg_smid", lambda a: nvvm.read_sreg("smid"), True),
    ("sreg_nsmid", lambda a: nvvm.read_sreg("nsmid"), True),
    ("sreg_globaltimer", lambda a: nvvm.read_sreg("globaltimer"), True),
    ("barrier0", lambda a: nvvm.Barrier0Op(), True),
    ("barrier_red_or_named", lambda a: nvvm.BarrierRedOrOp(1, 256, a[I]), True),
    ("trap", lambda a: nvvm.TrapOp(), True),
    ("bar_warp_sync", lambda a: nvvm.BarWarpSyncOp(a[I]), True),
    ("griddep_wait", lambda a: nvvm.GridDepControlWaitOp(), False),
    ("griddep_launch", lambda a: nvvm.GridDepControlLaunchDependentsOp(), False),
    ("nanosleep", lambda a: nvvm.NanosleepOp(a[I]), True),
    ("fence_acq_rel_gpu", lambda a: nvvm.FenceOp("acq_rel", "gpu"), True),
    ("fence_sc_sys", lambda a: nvvm.FenceOp("sc", "sys"), True),
    ("fence_acq_rel_cta", lambda a: nvvm.FenceOp("acq_rel", "cta"), True),
    ("fence_sc_cluster", lambda a: nvvm.FenceOp("sc", "cluster"), False),
    ("fence_proxy_shared_cta", lambda a: nvvm.FenceProxyAsyncOp(), False),
    ("fence_proxy_shared_cluster", lambda a: nvvm.FenceProxyAsyncOp("shared::cluster"), False),
    ("fence_proxy_global", lambda a: nvvm.FenceProxyAsyncOp("global"), False),
    ("fence_proxy_all", lambda a: nvvm.FenceProxyAsyncOp(""), False),
    ("ld_acquire_gpu_global_i32", lambda a: nvvm.LoadOp(a[G], i32, "acquire", "gpu"), True),
    ("ld_acquire_sys_global_i64", lambda a: nvvm.LoadOp(a[G], i64, "acquire", "sys"), True),
    ("ld_acquire_cluster_global", lambda a: nvvm.LoadOp(a[G], i32, "acquire", "cluster"), False),
    ("ld_relaxed_gpu_global_i32", lambda a: nvvm.LoadOp(a[G], i32, "relaxed", "gpu"), True),
    ("ld_relaxed_cta_shared_f32", lambda a: nvvm.LoadOp(a[S], f32, "relaxed", "cta"), True),
    ("ld_acquire_gpu_generic_i32", lambda a: nvvm.LoadOp(a[P], i32, "acquire"), True),
    ("ld_volatile_global_i32", lambda a: nvvm.LoadOp(a[G], i32, "volatile"), True),
    ("ld_volatile_shared_i64", lambda a: nvvm.LoadOp(a[S], i64, "volatile"), True),
    ("ld_weak_global_f32", lambda a: nvvm.LoadOp(a[G], f32, "weak"), True),
    ("ld_weak_generic_i64", lambda a: nvvm.LoadOp(a[P], i64, "weak"), True),
    ("st_release_gpu_global_i32", lambda a: nvvm.StoreOp(a[G], a[I], "release"), True),
    ("st_release_sys_global_i64", lambda a: nvvm.StoreOp(a[G], a[L], "release", "sys"), True),
    ("st_relaxed_gpu_generic_f32", lambda a: nvvm.StoreOp(a[P], a[F], "relaxed"), True),
    ("st_relaxed_cta_shared_i32", lambda a: nvvm.StoreOp(a[S], a[I], "relaxed", "cta"), True),
    ("st_volatile_global_i32", lambda a: nvvm.StoreOp(a[G], a[I], "volatile"), True),
    ("st_weak_shared_i64", lambda a: nvvm.StoreOp(a[S], a[L], "weak"), True),
    ("cas_relaxed_gpu_global_i32", lambda a: nvvm.AtomicCASOp(a[G], a[I], a[I]), True),
    (
        "cas_acq_rel_sys_global_i64",
        lambda a: nvvm.AtomicCASOp(a[G], a[L], a[L], "acq_rel", "sys"),
        True,
    ),
    ("cas_acquire_cta_shared_i32", lambda a: nvvm.AtomicCASOp(a[S], a[I], a[I], "acquire", "cta"),
     True),
    ("cas_release_gpu_generic_i64", lambda a: nvvm.AtomicCASOp(a[P], a[L], a[L], "release"),
     True),
]

# Every atom/red kind with each type it allows, in global memory, with a rotating ordering;
# plus shared and generic pointers.
_VALUE_ARG = {i32: I, i64: L, f32: F}
_ATOM_ORDERS = ["relaxed", "acquire", "release", "acq_rel"]
for _n, (_kind, _types) in enumerate(nvvm.ATOM_TYPES.items()):
    for _t in _types:
        _o = _ATOM_ORDERS[_n % 4]
        _v = _VALUE_ARG[_t]
        CASES.append((
            f"atom_{_kind.value}_{_o}_gpu_global_{_t}",
            lambda a, k=_kind.value, v=_v, o=_o: nvvm.AtomicOp(k, a[G], a[v], o, "gpu"),
            True,
        ))
        if _kind != nvvm.AtomicKind.EXCH:
            _ro = "release" if _n % 2 else "relaxed"
            CASES.append((
                f"red_{_kind.value}_{_ro}_gpu_global_{_t}",
                lambda a, k=_kind.value, v=_v, o=_ro: nvvm.ReduceOp(k, a[G], a[v], o, "gpu"),
                True,
            ))
CASES += [
    ("atom_add_relaxed_cta_shared_i32", lambda a: nvvm.AtomicOp("add", a[S], a[I], "relaxed",
                                                               "cta"), True),
    ("atom_exch_acq_rel_gpu_generic_f32", lambda a: nvvm.AtomicOp("exch", a[P], a[F], "acq_rel"),
     True),
    ("atom_add_release_sys_generic_i64", lambda a: nvvm.AtomicOp("add", a[P], a[L], "release",
                                                                "sys"), True),
    ("atom_max_acquire_cluster_global", lambda a: nvvm.AtomicOp("max", a[G], a[I], "acquire",
                                                               "cluster"), False),
    ("mbarrier_arrive_peer_release_cluster",
     lambda a: nvvm.MBarrierArriveOp(a[S], cta=a[I], release_cluster=True), False),
    ("mbarrier_try_wait_acquire_cluster",
     lambda a: nvvm.MBarrierTryWaitParityOp(a[S], a[I], acquire_cluster=True), False),
    ("mapa_generic", lambda a: nvvm.MapaOp(a[S], a[I]), False),
    ("red_add_release_gpu_shared_f32", lambda a: nvvm.ReduceOp("add", a[S], a[F], "release"),
     True),
    ("red_or_relaxed_sys_generic_i64", lambda a: nvvm.ReduceOp("or", a[P], a[L], "relaxed",
                                                              "sys"), True),
]

_TARGETS = [pytest.param("sm_90", id="sm_90"), pytest.param("sm_80", id="sm_80")]


# ------------------------------------------------------------------------------------------
# A tiny llvm-dialect -> LLVM IR printer, enough for what convert-nvvm-to-llvm produces.
# ------------------------------------------------------------------------------------------


def _ir_type(t: Attribute) -> str:
    if isinstance(t, llvm.LLVMPointerType):
        space = address_space(t)
        return "ptr" if space == 0 else f"ptr addrspace({space})"
    if isinstance(t, Float32Type):
        return "float"
    assert isinstance(t, IntegerType)
    return f"i{t.width.data}"


def to_llvm_ir(module: ModuleOp) -> str:
    kernel = next(o for o in module.walk() if isinstance(o, func.FuncOp))
    names: dict[SSAValue, str] = {a: f"%a{n}" for n, a in enumerate(kernel.body.block.args)}
    params = ", ".join(f"{_ir_type(a.type)} {names[a]}" for a in kernel.body.block.args)
    declares: set[str] = set()
    body: list[str] = []
    for n, op in enumerate(kernel.body.block.ops):
        ret = _ir_type(op.results[0].type) if op.results else "void"
        lhs = f"%v{n} = " if op.results else ""
        if op.results:
            names[op.results[0]] = f"%v{n}"
        args = ", ".join(f"{_ir_type(o.type)} {names[o]}" for o in op.operands)
        if isinstance(op, llvm.CallIntrinsicOp):
            declares.add(f"declare {ret} @{op.intrin.data}()")
            body.append(f"  {lhs}call {ret} @{op.intrin.data}({args})")
        elif isinstance(op, llvm.InlineAsmOp):
            asm = op.asm_string.data
            effect = " sideeffect" if op.has_side_effects is not None else ""
            body.append(
                f'  {lhs}call {ret} asm{effect} "{asm}", "{op.constraints.data}"({args})'
            )
        elif isinstance(op, func.ReturnOp):
            # Keep every result alive: a pure intrinsic whose value is unused would vanish.
            for value, name in names.items():
                if value.owner is not kernel.body.block:
                    body.append(f"  store volatile {_ir_type(value.type)} {name}, ptr %a2")
            body.append("  ret void")
        else:
            raise AssertionError(f"convert-nvvm-to-llvm left a non-llvm op: {op.name}")
    return "\n".join([
        'target triple = "nvptx64-nvidia-cuda"',
        *sorted(declares),
        f"define ptx_kernel void @k({params}) {{",
        *body,
        "}",
    ])


def _lowered(build: Builder) -> tuple[ModuleOp, str | None]:
    kernel = func.FuncOp("k", (ARG_TYPES, []))
    op = build(list(kernel.body.block.args))
    expected = ptx_string(op) if type(op) in _ptx_ops() else None
    kernel.body.block.add_ops([op, func.ReturnOp()])
    module = ModuleOp([kernel])
    module.verify()
    ConvertNVVMToLLVMPass().apply(Context(), module)
    module.verify()
    return module, expected


def _ptx_ops() -> set[type[Operation]]:
    return set(PTX_TEMPLATES)


def _compile(ir: str, arch: str) -> str:
    binding.initialize_all_targets()
    binding.initialize_all_asmprinters()
    target = binding.Target.from_triple("nvptx64-nvidia-cuda")
    machine = target.create_target_machine(cpu=arch, features="+ptx80", opt=2)
    mod = binding.parse_assembly(ir)
    mod.verify()
    return machine.emit_assembly(mod)


@pytest.mark.parametrize("arch", _TARGETS)
@pytest.mark.parametrize(("case", "build", "on_sm80"), CASES, ids=[c[0] for c in CASES])
def test_lowered_op_assembles(case: str, build: Builder, on_sm80: bool, arch: str, tmp_path: Path):
    if arch == "sm_80" and not on_sm80:
        pytest.skip("sm_90-only instruction")
    module, expected = _lowered(build)
    ptx = _compile(to_llvm_ir(module), arch)
    assert "llvm." not in ptx, "an intrinsic was not lowered (became an external call)"
    if expected is not None:
        # The inline PTX appears verbatim, operands replaced by registers.
        pattern = re.escape(expected)
        pattern = re.sub(r"\\\$\d", r"%(r|rd|f)\\d+", pattern)
        assert re.search(pattern, ptx), f"{expected!r} not in PTX:\n{ptx}"
    if PTXAS is None:
        pytest.skip("ptxas not installed")
    path = tmp_path / f"{case}.ptx"
    path.write_text(ptx)
    result = subprocess.run(
        [PTXAS, f"-arch={arch}", str(path), "-o", str(tmp_path / "out.cubin")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"ptxas rejected:\n{result.stderr}\n{ptx}"


def test_intrinsic_lowering_emits_expected_ptx():
    checks = {
        "sreg_globaltimer": "%globaltimer",
        "sreg_smid": "%smid",
        "barrier0": "bar.sync",
        "trap": "trap;",
        "bar_warp_sync": "bar.warp.sync",
        "griddep_wait": "griddepcontrol.wait;",
        "griddep_launch": "griddepcontrol.launch_dependents;",
    }
    builders = {c[0]: c[1] for c in CASES}
    for case, needle in checks.items():
        module, _ = _lowered(builders[case])
        assert needle in _compile(to_llvm_ir(module), "sm_90"), case


def test_ptx_strings():
    """The spelled-out PTX of the memory model's key instructions (docs/ARCHITECTURE.md)."""
    kernel = func.FuncOp("k", (ARG_TYPES, []))
    a = list(kernel.body.block.args)
    assert ptx_string(nvvm.LoadOp(a[G], i32, "acquire")) == "ld.acquire.gpu.global.u32 $0, [$1];"
    assert ptx_string(nvvm.LoadOp(a[G], i32, "volatile", "sys")) == (
        "ld.volatile.global.u32 $0, [$1];"
    )
    assert ptx_string(nvvm.StoreOp(a[G], a[I], "release")) == "st.release.gpu.global.u32 [$0], $1;"
    assert ptx_string(nvvm.AtomicOp("add", a[G], a[I], "release")) == (
        "atom.release.gpu.global.add.u32 $0, [$1], $2;"
    )
    assert ptx_string(nvvm.AtomicOp("exch", a[S], a[F])) == (
        "atom.relaxed.gpu.shared.exch.b32 $0, [$1], $2;"
    )
    assert ptx_string(nvvm.ReduceOp("add", a[G], a[I], "release")) == (
        "red.release.gpu.global.add.u32 [$0], $1;"
    )
    assert ptx_string(nvvm.AtomicCASOp(a[P], a[L], a[L], "acq_rel")) == (
        "atom.acq_rel.gpu.cas.b64 $0, [$1], $2, $3;"
    )
    assert ptx_string(nvvm.AtomicOp("max", a[G], a[I])) == (
        "atom.relaxed.gpu.global.max.u32 $0, [$1], $2;"
    )
    assert ptx_string(nvvm.AtomicOp("smin", a[G], a[L])) == (
        "atom.relaxed.gpu.global.min.s64 $0, [$1], $2;"
    )
    assert ptx_string(nvvm.FenceOp("acq_rel", "gpu")) == "fence.acq_rel.gpu;"
    assert ptx_string(nvvm.FenceProxyAsyncOp()) == "fence.proxy.async.shared::cta;"
    assert ptx_string(nvvm.FenceProxyAsyncOp("")) == "fence.proxy.async;"


def test_memory_ops_clobber_memory_and_have_side_effects():
    module, _ = _lowered(lambda a: nvvm.LoadOp(a[G], i32, "acquire"))
    asm = next(o for o in module.walk() if isinstance(o, llvm.InlineAsmOp))
    assert asm.has_side_effects is not None
    assert asm.constraints.data == "=r,l,~{memory}"


def test_python_api_rejects_bad_arguments():
    kernel = func.FuncOp("k", (ARG_TYPES, []))
    a = list(kernel.body.block.args)
    with pytest.raises(ValueError):
        nvvm.FenceOp("acq_rel", "device")
    with pytest.raises(ValueError):
        nvvm.AtomicOp("mul", a[G], a[I])
    with pytest.raises(ValueError, match="unknown special register"):
        nvvm.read_sreg("tid.w")
    with pytest.raises(VerifyException, match="cannot have ordering 'release'"):
        nvvm.LoadOp(a[G], i32, "release").verify()
    with pytest.raises(VerifyException, match="cannot have ordering 'acquire'"):
        nvvm.ReduceOp("add", a[G], a[I], "acquire").verify()
    with pytest.raises(VerifyException, match="address space"):
        nvvm.LoadOp(kernel.body.block.insert_arg(_ptr(5), 0), i32, "weak").verify()
    # scope is ignored for weak/volatile
    assert nvvm.LoadOp(a[G], i32, "weak", "sys").scope is None


# ------------------------------------------------------------------------------------------
# The whole way: gpu + nvvm kernel text -> project passes -> llvmlite translation -> ptxas.
# ------------------------------------------------------------------------------------------

POST_WAIT_KERNEL = """
gpu.module @m {
  gpu.func @k(%sem: !llvm.ptr<1>, %tile: !llvm.ptr<3>) kernel {
    %t = gpu.thread_id x
    gpu.barrier
    %seen = nvvm.ld acquire, gpu %sem : !llvm.ptr<1> -> i32
    %backoff = arith.constant 100 : i32
    nvvm.nanosleep %backoff : i32
    gpu.barrier
    %w = nvvm.ld weak %tile : !llvm.ptr<3> -> i32
    nvvm.st relaxed, cta %tile, %w : !llvm.ptr<3>, i32
    gpu.barrier
    nvvm.fence acq_rel, gpu
    nvvm.red add relaxed, gpu %sem, %backoff : !llvm.ptr<1>, i32
    nvvm.griddepcontrol.launch_dependents
    gpu.return
  }
}
"""

PIPELINE = [
    "convert-gpu-to-nvvm",
    "convert-nvvm-to-llvm",
    "convert-arith-to-llvm",
    "convert-func-to-llvm",
    "reconcile-unrealized-casts",
]


def test_post_wait_kernel_to_ptx_keeps_program_order(tmp_path: Path):
    from xdsl.parser import Parser

    from tilesync.dialects import all_dialects_with_xdsl
    from tilesync.lowering.pipeline import build_pipeline
    from tilesync.lowering.ptx import module_to_ptx

    ctx = Context()
    for name, factory in all_dialects_with_xdsl().items():
        ctx.register_dialect(name, factory)
    module = Parser(ctx, POST_WAIT_KERNEL).parse_module()
    build_pipeline(PIPELINE).apply(ctx, module)
    assert not [op.name for op in module.walk() if op.name.startswith(("nvvm.", "gpu.t"))]
    ptx = module_to_ptx(module, "sm_90")
    order = [
        "bar.sync",
        "ld.acquire.gpu.global.u32",
        "nanosleep.u32",
        "bar.sync",
        "ld.shared.u32",
        "st.relaxed.cta.shared.u32",
        "bar.sync",
        "fence.acq_rel.gpu;",
        "red.relaxed.gpu.global.add.u32",
        "griddepcontrol.launch_dependents;",
    ]
    position = 0
    for needle in order:
        found = ptx.find(needle, position)
        assert found >= 0, f"{needle!r} missing or out of order in:\n{ptx}"
        position = found + len(needle)
    if PTXAS is None:
        pytest.skip("ptxas not installed")
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    result = subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", str(tmp_path / "k.cubin")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
