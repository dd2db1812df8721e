"""The rooms of the project import only from rooms below them (docs/ARCHITECTURE.md).

Every import counts, the ones inside functions too: the import graph between rooms is acyclic
and follows LAYERS. Optional third-party packages (torch) may only be imported inside
functions, so `import tilesync` works without them."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Lowest first; a room may import only from rooms in earlier layers (or from itself).
LAYERS: list[set[str]] = [
    {"contract"},  # the compiler↔runtime contract: the standard library only
    {"compat"},  # xDSL workarounds
    {"dialects"},
    {"analysis"},  # models: stage graph, wave model, forward progress, simulator
    {"kernels"},  # kernel generators (IR builders), configs, references
    {"transforms", "runtime"},  # passes; cuda-python runtime
    {"lowering"},  # conversions to llvm, llvmlite, PTX
    {"api"},  # tilesync.compile
    {"tilesync"},  # the package's __init__
    {"harness"},  # compile pool and cache, runners of generated kernels
    {"frontend"},  # model front ends (torch)
    {"examples"},  # example models (plain PyTorch)
    {"bench"},
    {"tools"},
]
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}
OPTIONAL = {"torch", "triton", "matplotlib", "scipy"}  # imported lazily, inside functions
SKIP = {"test", "build", "docs"}  # and hidden folders (.venv, .git, caches, .carry)


def room_of_module(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "tilesync":
        return None
    return "tilesync" if len(parts) == 1 else parts[1]


def source_files() -> list[Path]:
    files = []
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT).parts
        if SKIP & set(parts) or "Output" in parts or any(x.startswith(".") for x in parts):
            continue
        files.append(p)
    return files


def room_of_file(path: Path) -> str:
    rel = path.relative_to(ROOT)
    if len(rel.parts) == 1:
        return "tilesync" if rel.stem == "__init__" else rel.stem
    return rel.parts[0]


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(module, line, at top level) of every absolute import in `path`."""
    tree = ast.parse(path.read_text(), str(path))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno, id(node) in top))
    return found


def room_graph() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in source_files():
        source = room_of_file(path)
        for module, line, _ in imports(path):
            target = room_of_module(module)
            if target is not None and target != source:
                edges[(source, target)].append(f"{path.relative_to(ROOT)}:{line}")
    return edges


def test_every_room_has_a_layer():
    rooms = {room_of_file(p) for p in source_files()}
    assert rooms <= set(RANK), f"rooms without a layer: {sorted(rooms - set(RANK))}"


def test_imports_only_go_down():
    upward = [f"{a} -> {b} ({', '.join(where[:3])})"
              for (a, b), where in sorted(room_graph().items()) if RANK[b] >= RANK[a]]
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_room_graph_is_acyclic():
    edges = room_graph()
    succ: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, path: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(succ[node]):
            if state.get(nxt) == 1:
                cycle.extend([*path, node, nxt])
                return True
            if nxt not in state and visit(nxt, [*path, node]):
                return True
        state[node] = 2
        return False

    for node in sorted(succ):
        if node not in state and visit(node, []):
            break
    assert not cycle, f"cycle between rooms: {' -> '.join(cycle)}"


def test_optional_packages_are_imported_lazily():
    """Modules of the package import optional packages inside functions; the example models
    (plain PyTorch, examples/) are scripts for users and may import torch at the top."""
    eager = [f"{p.relative_to(ROOT)}:{line} {module}"
             for p in source_files() if room_of_file(p) != "examples"
             for module, line, top in imports(p)
             if top and module.split(".")[0] in OPTIONAL]
    assert not eager, "optional packages imported at module level:\n" + "\n".join(eager)


def test_the_checker_sees_function_level_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from tilesync.tools import cli\n")
    assert imports(probe) == [("tilesync.tools", 2, False)]
