"""A mutation fuzzer of tilesync's front door: `python -m tilesync.tools.fuzz --seconds 60`.

It mutates the repository's own programs (examples/*.mlir and test/filecheck/**/*.mlir, each
`// -----` chunk a seed): lines deleted, duplicated or swapped; integers set to 0, -1 or huge;
types, symbols, SSA values, affine maps, forall ranges, grids and tiles changed; a stray quote;
truncation. Each input runs in this process's image (a forked worker) under up to five
pipelines:

    parse   parse and verify
    sync    the cuSync passes (generate policies, insert waits and posts, sync-verify)
    lower   the lowering to the llvm dialect and LLVM's PTX
    full    what `tilesync.compile` runs by default (the cuSync passes where the program
            needs them, then the lowering and PTX; skipped where it equals `lower`)
    dataflow  Kitsune's passes where the program is their input (FORM_PIPELINE_PASSES on a
            stage program whose stages say their operator kind, PIPELINE_PASSES on one that
            holds a dataflow.pipeline)

and each run ends in one of

    success      it compiled
    diagnostic   what the user sees is a diagnostic: a CompileError with a source location
                 (the CLIs' "file:line:col: error: ..."), not an internal error and not a
                 Python exception's name in its message; the cause chain behind it is not
                 judged (a ValueError of xDSL's that the parser words is fine)
    traceback    anything else: another exception (a KeyError reaching the user), an internal
                 error, a message naming a Python exception (a KeyError that the driver
                 turned into a message is still a bug), or an error without a location
    crash        the worker process died (LLVM aborting or exiting, a segfault)
    hang         the run took longer than the limit (default 10 s)

A summary names each distinct failure site (the innermost tilesync frame, file:line, of the
exception; for a hang the frame the watchdog found; for a crash what the process printed) with
how often it was hit and the input that hit it first: `--replay N` prints input N, `--save DIR`
writes one reproducer per site. Inputs depend only on the seed and their number, so a run with
the same seed reproduces every input whatever the machine's speed. Workers run with a memory
limit, so an unbounded enumeration fails with MemoryError instead of taking the machine.
"""

from __future__ import annotations

import argparse
import builtins
import faulthandler
import multiprocessing
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
SEED_GLOBS = ("examples/*.mlir", "test/filecheck/**/*.mlir")
PIPELINES = ("parse", "sync", "lower", "full", "dataflow")
FORM_PIPELINE_PASSES = ("dataflow-form-pipeline", "dataflow-split-reductions",
                        "dataflow-insert-queues", "dataflow-allot-ctas{sms=132}",
                        "dataflow-verify{sms=132}")
"""Kitsune's passes on a stage program whose stages say their operator kind (`dataflow.kind`):
form the pipeline, split its reductions, make its edges queues, size its stages, prove it."""
PIPELINE_PASSES = ("dataflow-verify{sms=132}", "convert-dataflow-to-nvvm",
                   "dataflow-persistent-kernel")
"""On a program that holds a `dataflow.pipeline` already: prove it, lower its queues and fuse
its stages into one persistent kernel."""
OUTCOMES = ("success", "diagnostic", "traceback", "crash", "hang")
FAILURES = ("traceback", "crash", "hang")

# ---------------------------------------------------------------------------------------------
# Seeds and mutations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    name: str  # path relative to the repository, with "#chunk" for split inputs
    text: str
    valid: bool  # parses and verifies as it is


def load_seeds(root: Path = PACKAGE) -> list[Seed]:
    """Every `// -----` chunk of the repository's .mlir programs, without comment lines (a
    mutation of a comment tests nothing)."""
    from tilesync.api import parse

    def valid(text: str) -> bool:
        try:
            parse(text)
        except Exception:
            return False
        return True

    seeds: list[Seed] = []
    for pattern in SEED_GLOBS:
        for path in sorted(root.glob(pattern)):
            if "Inputs" in path.parts:
                continue
            chunks = re.split(r"^// -----.*$", path.read_text(encoding="utf-8"), flags=re.M)
            for number, chunk in enumerate(chunks):
                lines = [line for line in chunk.splitlines()
                         if not line.lstrip().startswith("//")]
                text = "\n".join(lines).strip("\n")
                if text:
                    name = path.relative_to(root).as_posix()
                    seeds.append(Seed(f"{name}#{number}" if len(chunks) > 1 else name,
                                      text + "\n", valid(text)))
    return seeds


INTEGERS = (0, -1, 1, 2, 3, 31, 32, 33, 255, 256, 1024, 1025, 65536, 2**31 - 1, 2**31,
            2**32, 2**32 + 1, 2**63 - 1, 2**63, 2**64, -(2**31), -(2**63), 10**30)
TYPES = ("i1", "i8", "i16", "i32", "i64", "i69", "i0", "index", "f16", "bf16", "f32", "f64",
         "memref<?xf32>", "memref<?xi32>", "memref<4x4xf16, 3>", "vector<4xf32>", "none",
         "!llvm.ptr", "tuple<>")
AFFINE_TERMS = ("d0 * d1", "s0 * d0", "d0 floordiv 0", "d0 mod 0", "d0 ceildiv 0", "d0 mod -3",
                "d0 floordiv -2", "d0 * 4294967296", "d0 + 9223372036854775807", "-d0", "d2",
                "s3", "4294967296",  # out of range or not affine
                "d0", "d1", "s0", "d0 + 1", "d1 - 1", "d0 * 2", "d1 mod 3", "d1 floordiv 2",
                "d0 ceildiv 4", "s0 * 2", "0")  # affine, perhaps out of the grid
RANGES = ("[0, 0)", "[5, 2)", "[0, 4294967296)", "[-9223372036854775808, 9223372036854775807)",
          "[-3, 2)", "[0, 1)", "[0, 65536)")
ARRAYS = ("array<i64: 0>", "array<i64: -1, 4>", "array<i64: 4294967296, 4>",
          "array<i64: 2147483648>", "array<i64: 65536, 65536, 65536>", "array<i64: 4, 4, 4, 4>",
          "array<i64>", "array<i32: 4294967296>", "array<i69: 7>", "array<i64: 1, 1, 1>",
          "array<i32: 0, 1, 1>", "array<i32: 1024, 1024, 1>", "array<f32: 1.0>")
_INTEGER = re.compile(r"(?<![\w%#@^.$-])-?\d+(?![\w.])")
_TYPE = re.compile(r"\b(?:[if]\d+|bf16|index)\b|memref<[^<>]*>")
_SYMBOL = re.compile(r"@[\w$.-]+")
_VALUE = re.compile(r"%[\w$.-]+")
_AFFINE_RESULT = re.compile(  # an affine map's results, after its dims and symbols
    r"\((?:[ds]\d+(?:, )?)+\)(?:\[[^\]]*\])? -> \(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_AFFINE_ATOM = re.compile(r"\b[ds]\d+\b")
_RANGE = re.compile(r"\[-?\d+, -?\d+\)")
_ARRAY = re.compile(r"array<[^<>]*>")
_PUNCTUATION = re.compile(r"[{}()\[\]<>,:=]")

Mutator = Callable[[random.Random, str], str | None]


def _replace_match(rng: random.Random, text: str, pattern: re.Pattern[str],
                   make: Callable[[re.Match[str]], str]) -> str | None:
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    match = rng.choice(matches)
    return text[:match.start()] + make(match) + text[match.end():]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def delete_lines(rng: random.Random, text: str) -> str | None:
    lines = _lines(text)
    if len(lines) < 2:
        return None
    start = rng.randrange(len(lines))
    del lines[start:start + rng.choice((1, 1, 1, 2, 3))]
    return "".join(lines)


def duplicate_line(rng: random.Random, text: str) -> str | None:
    lines = _lines(text)
    if not lines:
        return None
    index = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1) if rng.random() < 0.3 else index, lines[index])
    return "".join(lines)


def swap_lines(rng: random.Random, text: str) -> str | None:
    lines = _lines(text)
    if len(lines) < 2:
        return None
    i = rng.randrange(len(lines))
    j = min(len(lines) - 1, i + rng.randint(1, 3)) if rng.random() < 0.7 else \
        rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def set_integer(rng: random.Random, text: str) -> str | None:
    """An integer literal set to an extreme value, or moved by one (a near miss)."""
    def value(match: re.Match[str]) -> str:
        if rng.random() < 0.4:
            return str(int(match.group()) + rng.choice((-1, 1)))
        return str(rng.choice(INTEGERS))

    return _replace_match(rng, text, _INTEGER, value)


def change_type(rng: random.Random, text: str) -> str | None:
    return _replace_match(rng, text, _TYPE, lambda m: rng.choice(TYPES))


def change_symbol(rng: random.Random, text: str) -> str | None:
    symbols = [*sorted(set(_SYMBOL.findall(text))), "@nowhere", "@a::@b::@c"]
    return _replace_match(rng, text, _SYMBOL, lambda m: rng.choice(symbols))


def change_value(rng: random.Random, text: str) -> str | None:
    """An SSA use or definition renamed to another value of the program (used before it is
    defined, defined twice, of another type) or to one that does not exist."""
    values = [*sorted(set(_VALUE.findall(text))), "%undefined"]
    return _replace_match(rng, text, _VALUE, lambda m: rng.choice(values))


def change_affine_map(rng: random.Random, text: str) -> str | None:
    def mutate(match: re.Match[str]) -> str:
        results = match.group(1)
        atoms = list(_AFFINE_ATOM.finditer(results))
        choice = rng.random()
        if atoms and choice < 0.6:
            atom = rng.choice(atoms)
            results = results[:atom.start()] + rng.choice(AFFINE_TERMS) + results[atom.end():]
        elif choice < 0.8:
            results = f"{results}, {rng.choice(AFFINE_TERMS)}" if results else \
                rng.choice(AFFINE_TERMS)
        else:
            results = ", ".join(results.split(", ")[:-1])
        head = match.group()[:match.start(1) - match.start()]
        return f"{head}{results})"

    return _replace_match(rng, text, _AFFINE_RESULT, mutate)


def change_range(rng: random.Random, text: str) -> str | None:
    return _replace_match(rng, text, _RANGE, lambda m: rng.choice(RANGES))


def change_array(rng: random.Random, text: str) -> str | None:
    """A grid, block, tile or other dense array replaced by an extreme one."""
    return _replace_match(rng, text, _ARRAY, lambda m: rng.choice(ARRAYS))


def delete_punctuation(rng: random.Random, text: str) -> str | None:
    return _replace_match(rng, text, _PUNCTUATION, lambda m: "")


def insert_quote(rng: random.Random, text: str) -> str | None:
    """A stray `"`: a string literal that runs to the end of its line."""
    position = rng.randrange(len(text) + 1)
    return text[:position] + '"' + text[position:]


def truncate(rng: random.Random, text: str) -> str | None:
    return text[:rng.randrange(len(text))] if text else None


# name -> (weight, mutator)
MUTATORS: dict[str, tuple[int, Mutator]] = {
    "delete-lines": (2, delete_lines),
    "duplicate-line": (2, duplicate_line),
    "swap-lines": (2, swap_lines),
    "integer": (8, set_integer),
    "type": (3, change_type),
    "symbol": (3, change_symbol),
    "value": (2, change_value),
    "affine-map": (4, change_affine_map),
    "range": (3, change_range),
    "array": (4, change_array),
    "punctuation": (1, delete_punctuation),
    "quote": (1, insert_quote),
    "truncate": (1, truncate),
}


def seed_weight(seed: Seed) -> int:
    """How often a seed is drawn: the examples (whole stage programs, the deepest inputs) most,
    programs that do not compile as they are (the diagnostics tests) least."""
    if not seed.valid:
        return 1
    return 8 if seed.name.startswith("examples/") else 4


@dataclass(frozen=True)
class FuzzInput:
    number: int
    seed: str  # the seed program's name
    mutations: tuple[str, ...]
    text: str


def make_input(seeds: list[Seed], seed: int, number: int) -> FuzzInput:
    """Input `number` of the campaign with random seed `seed` (a function of both alone)."""
    rng = random.Random(f"tilesync-fuzz/{seed}/{number}")
    weights = [seed_weight(s) for s in seeds]
    base = rng.choices(seeds, weights)[0]
    text = base.text
    applied: list[str] = []
    names = list(MUTATORS)
    mutator_weights = [MUTATORS[n][0] for n in names]
    for _ in range(rng.choice((1, 1, 1, 1, 2, 3))):
        for _attempt in range(8):
            name = rng.choices(names, mutator_weights)[0]
            mutated = MUTATORS[name][1](rng, text)
            if mutated is not None and mutated != text:
                text = mutated
                applied.append(name)
                break
    return FuzzInput(number, base.name, tuple(applied), text)


# ---------------------------------------------------------------------------------------------
# Running one input (in a worker)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    pipeline: str
    kind: str  # one of OUTCOMES
    site: str = ""  # where a failure happened (file:line and exception type)
    message: str = ""
    seconds: float = 0.0


def _innermost_site(frames: list[tuple[str, int]]) -> str:
    """file:line of the innermost frame in tilesync (not this file), else the innermost."""
    ours = [(f, n) for f, n in frames if _ours(f) and not f.endswith("tools/fuzz.py")]
    chosen = ours[-1] if ours else (frames[-1] if frames else ("?", 0))
    path, line = chosen
    for prefix in (str(PACKAGE) + os.sep,):
        path = path.removeprefix(prefix)
    if "site-packages" in path:
        path = path.split("site-packages" + os.sep, 1)[1]
    return f"{path}:{line}"


def _exception_site(err: BaseException) -> str:
    frames = [(f.filename, f.lineno or 0) for f in traceback.extract_tb(err.__traceback__)]
    return f"{_innermost_site(frames)} {type(err).__name__}"


def _ours(filename: str) -> bool:
    return filename.startswith(str(PACKAGE)) and "site-packages" not in filename


# Python's own exception names: a message that shows one ("KeyError: 'grid'") is a bug that
# the driver worded, not a diagnostic (the parser and compile_error name the type of an
# exception that is not one of xDSL's or tilesync's signals).
_PYTHON_ERRORS = tuple(sorted(name for name, value in vars(builtins).items()
                              if isinstance(value, type) and issubclass(value, BaseException)))
_PYTHON_ERROR_IN_MESSAGE = re.compile(r"\b(?:" + "|".join(_PYTHON_ERRORS) + r"):")


def reads_as_a_diagnostic(err: BaseException) -> bool:
    """What the user sees is a diagnostic: a CompileError (what `tilesync.compile` raises and
    the CLIs print as "file:line:col: error: ...") with a location, whose message is neither
    an internal error nor a Python exception's name. How it came about (the cause chain: a
    ValueError of xDSL's that the parser turned into its message, say) does not matter."""
    from tilesync.contract import CompileError

    if not isinstance(err, CompileError) or err.location is None:
        return False
    return not err.message.startswith("internal error") \
        and _PYTHON_ERROR_IN_MESSAGE.search(err.message) is None


def _bug_origin(err: BaseException) -> BaseException:
    """Where to locate a failure: the innermost exception of the cause chain that is not an
    error tilesync or xDSL raise for the user (where the bug happened), else `err`."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from tilesync.contract import TilesyncError

    chain = [err]
    while chain[-1].__cause__ is not None and len(chain) < 20:
        chain.append(chain[-1].__cause__)
    signals = TilesyncError | ParseError | DiagnosticException
    return next((e for e in reversed(chain) if not isinstance(e, signals)), err)


def classify(err: BaseException) -> tuple[str, str, str]:
    """(kind, site, message) of a run that raised `err`: a diagnostic when the user sees one
    (`reads_as_a_diagnostic`); else a traceback, at the innermost exception of the cause
    chain that is no diagnostic (or, for a diagnostic without a location, where it was
    raised)."""
    message = " ".join(str(err).split())[:300] or type(err).__name__
    if reads_as_a_diagnostic(err):
        return "diagnostic", "", message
    root = _bug_origin(err)
    site = _exception_site(root)
    if root is err and getattr(err, "location", True) is None:
        site += " (no location)"
    return "traceback", site, message


def run_pipelines(text: str, name: str) -> Iterator[Outcome]:
    """Parse `text`, then run the compiling pipelines on copies of the module; one
    Outcome per pipeline run, as each ends (a parse that fails ends the input)."""
    from tilesync import api

    def attempt(pipeline: str, action: Callable[[], object]) -> Outcome:
        start = time.perf_counter()
        try:
            action()
        except Exception as err:
            kind, site, message = classify(err)
            return Outcome(pipeline, kind, site, message, time.perf_counter() - start)
        return Outcome(pipeline, "success", seconds=time.perf_counter() - start)

    parsed = []
    outcome = attempt("parse", lambda: parsed.append(api.parse(text, name=name)))
    yield outcome
    if not parsed:
        return
    module = parsed[0]
    yield attempt("sync", lambda: api.lower(module.clone(), list(api.SYNC_PASSES)))
    yield attempt("lower", lambda: api.compile(module.clone(), pipeline=list(
        api.KERNEL_TO_LLVM)))
    if api.sync_passes_for(module):
        yield attempt("full", lambda: api.compile(module.clone()))
    dataflow_passes = _dataflow_passes(module)
    if dataflow_passes:
        yield attempt("dataflow", lambda: api.lower(module.clone(), list(dataflow_passes)))


def _dataflow_passes(module) -> tuple[str, ...]:
    """The dataflow passes `module` is input to: FORM_PIPELINE_PASSES for a stage program with
    operator kinds, PIPELINE_PASSES for one holding a pipeline, else none."""
    from tilesync.contract import DATAFLOW_KIND_ATTR
    from tilesync.dialects import dataflow, sync

    ops = list(module.walk())
    if any(isinstance(op, dataflow.PipelineOp) for op in ops):
        return PIPELINE_PASSES
    if any(isinstance(op, sync.StageOp) and DATAFLOW_KIND_ATTR in op.attributes for op in ops):
        return FORM_PIPELINE_PASSES
    return ()


# What a worker runs on each input: its text and name -> an Outcome per pipeline run.
Runner = Callable[[str, str], Iterator[Outcome]]

# Worker messages: ("outcome", Outcome) per run, ("done",) per input.


def _worker(conn: Connection, log_path: str, memory_bytes: int, limit: float,
            runner: Runner) -> None:
    # What LLVM or xDSL print goes to the worker's log, read back when the worker dies.
    log = open(log_path, "a", buffering=1)  # the worker's stderr for its whole life
    os.dup2(log.fileno(), 2)
    sys.stderr = log
    warnings.simplefilter("ignore")
    faulthandler.enable(log)
    if memory_bytes:  # on top of what the process (forked from its parent) already maps
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (mapped + memory_bytes, mapped + memory_bytes))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        text, name = job
        # Where a run that the parent will kill as a hang is: dumped just before the limit.
        faulthandler.dump_traceback_later(limit * 0.8, file=log)
        for outcome in runner(text, name):
            faulthandler.cancel_dump_traceback_later()
            conn.send(("outcome", outcome))
            faulthandler.dump_traceback_later(limit * 0.8, file=log)
        faulthandler.cancel_dump_traceback_later()
        conn.send(("done",))


class _Worker:
    """A forked process that runs inputs one at a time, and what the parent knows of it."""

    def __init__(self, context, memory_bytes: int, limit: float, directory: str,
                 runner: Runner) -> None:
        fd, self.log_path = tempfile.mkstemp(prefix="worker-", suffix=".log", dir=directory)
        os.close(fd)
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker, args=(child, self.log_path, memory_bytes, limit, runner),
            daemon=True)
        self.process.start()
        child.close()
        self.job: FuzzInput | None = None
        self.reported: list[str] = []
        self.deadline = 0.0
        self.served = 0

    def send(self, job: FuzzInput, limit: float) -> None:
        self.job, self.reported, self.served = job, [], self.served + 1
        self.deadline = time.monotonic() + limit
        faulthandler_reset(self.log_path)
        self.conn.send((job.text, f"fuzz-{job.number}.mlir"))

    def running_pipeline(self) -> str:
        return next((p for p in PIPELINES if p not in self.reported), PIPELINES[-1])

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()
        Path(self.log_path).unlink(missing_ok=True)

    def log_tail(self) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def faulthandler_reset(path: str) -> None:
    """Empty a worker's log before its next input (the worker appends; truncate in place)."""
    with open(path, "r+") as f:
        f.truncate(0)


def _dump_site(log: str) -> str:
    """Where a worker that died or hung was: the innermost tilesync frame of the thread that
    faulthandler dumped first among those running tilesync ("Current thread" when a signal
    killed it; frames listed most recent first), else what the process printed last (LLVM
    exits with a line of its own)."""
    blocks = re.split(r"^(?=(?:Current thread|Thread) 0x)", log, flags=re.M)
    blocks.sort(key=lambda b: not b.startswith("Current thread"))
    for block in blocks:
        frames = [(m.group(1), int(m.group(2)))
                  for m in re.finditer(r'File "([^"]+)", line (\d+)', block)]
        if any(f.startswith(str(PACKAGE)) and "site-packages" not in f for f, _ in frames):
            return _innermost_site(list(reversed(frames)))
    lines = [line.strip() for line in log.splitlines()
             if line.strip() and not line.lstrip().startswith(("File ", "Thread ", "Current "))]
    return lines[-1][:200] if lines else "no output"


# ---------------------------------------------------------------------------------------------
# The campaign
# ---------------------------------------------------------------------------------------------


@dataclass
class Failure:
    kind: str
    site: str
    count: int
    number: int  # the first input that hit it
    pipeline: str
    message: str


@dataclass
class Summary:
    seed: int
    inputs: int = 0
    seconds: float = 0.0
    runs: Counter = field(default_factory=Counter)  # pipeline -> runs
    outcomes: Counter = field(default_factory=Counter)  # kind -> runs
    failures: dict[tuple[str, str], Failure] = field(default_factory=dict)
    inputs_by_number: dict[int, FuzzInput] = field(default_factory=dict)

    def record(self, job: FuzzInput, outcome: Outcome) -> None:
        self.runs[outcome.pipeline] += 1
        self.outcomes[outcome.kind] += 1
        if outcome.kind in FAILURES:
            key = (outcome.kind, outcome.site)
            if key in self.failures:
                self.failures[key].count += 1
            else:
                self.failures[key] = Failure(outcome.kind, outcome.site, 1, job.number,
                                             outcome.pipeline, outcome.message)
                self.inputs_by_number[job.number] = job

    @property
    def total_runs(self) -> int:
        return sum(self.runs.values())

    @property
    def failed_runs(self) -> int:
        return sum(self.outcomes[k] for k in FAILURES)

    def report(self) -> str:
        total = self.total_runs or 1
        lines = [
            f"seed {self.seed}: {self.inputs} inputs, {self.total_runs} runs in "
            f"{self.seconds:.0f} s (" + ", ".join(f"{p} {self.runs[p]}" for p in PIPELINES)
            + ")",
            "outcomes: " + ", ".join(
                f"{k} {self.outcomes[k]} ({100 * self.outcomes[k] / total:.2f}%)"
                for k in OUTCOMES),
        ]
        if self.failures:
            lines.append(f"{len(self.failures)} distinct failure sites:")
            for failure in sorted(self.failures.values(), key=lambda f: (-f.count, f.site)):
                lines.append(f"  {failure.kind:9} {failure.count:6}  {failure.site}  "
                             f"[input {failure.number}, {failure.pipeline}] {failure.message}")
        else:
            lines.append("no tracebacks, crashes or hangs")
        return "\n".join(lines)

    def save(self, directory: Path) -> list[Path]:
        """One reproducer per failure site."""
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for index, failure in enumerate(sorted(self.failures.values(),
                                               key=lambda f: (-f.count, f.site))):
            job = self.inputs_by_number[failure.number]
            path = directory / f"{index:02}-{failure.kind}-input{failure.number}.mlir"
            header = (f"// tilesync fuzz seed {self.seed} input {failure.number} "
                      f"({job.seed}; {', '.join(job.mutations)})\n"
                      f"// {failure.kind} under '{failure.pipeline}' at {failure.site}\n"
                      f"// {failure.message}\n")
            path.write_text(header + job.text, encoding="utf-8")
            written.append(path)
        return written


def fuzz(seconds: float = 60.0, seed: int = 0, inputs: int | None = None,
         workers: int | None = None, limit: float = 10.0, memory_mb: int = 3072,
         progress: Callable[[Summary], None] | None = None,
         recycle: int = 400, runner: Runner = run_pipelines) -> Summary:
    """Run inputs 0, 1, 2, ... of campaign `seed` until `inputs` ran or `seconds` passed, in
    `workers` forked processes (default: the CPUs), each run limited to `limit` seconds and
    each worker to `memory_mb` of address space beyond what it started with (0: unlimited).
    A worker is replaced after `recycle` inputs, and after a crash or hang. `runner` runs one
    input in a worker."""
    seeds = load_seeds()
    context = multiprocessing.get_context("fork")
    count = workers or os.cpu_count() or 1
    summary = Summary(seed)
    start = time.monotonic()
    next_number = 0
    last_progress = start
    with tempfile.TemporaryDirectory(prefix="tilesync-fuzz-") as directory:
        def spawn() -> _Worker:
            return _Worker(context, memory_mb << 20, limit, directory, runner)

        pool = [spawn() for _ in range(count)]

        def replace(worker: _Worker) -> None:
            worker.stop()
            pool[pool.index(worker)] = spawn()

        try:
            while True:
                elapsed = time.monotonic() - start
                accepting = elapsed < seconds and (inputs is None or next_number < inputs)
                for index, worker in enumerate(pool):
                    if worker.job is None and accepting:
                        if worker.served >= recycle:
                            replace(worker)
                            worker = pool[index]
                        job = make_input(seeds, seed, next_number)
                        next_number += 1
                        worker.send(job, limit)
                        accepting = inputs is None or next_number < inputs
                busy = [w for w in pool if w.job is not None]
                if not busy:
                    break
                now = time.monotonic()
                timeout = max(0.0, min(w.deadline for w in busy) - now)
                ready = wait([w.conn for w in busy], timeout=min(timeout, 1.0))
                for worker in busy:
                    job = worker.job
                    if worker.conn in ready:
                        try:
                            message = worker.conn.recv()
                        except (EOFError, OSError):
                            worker.process.join(2)
                            code = worker.process.exitcode
                            status = f"signal {-code}" if code is not None and code < 0 \
                                else f"exit status {code}"
                            summary.record(job, Outcome(
                                worker.running_pipeline(), "crash", _dump_site(
                                    worker.log_tail()), f"the process ended ({status})"))
                            summary.inputs += 1
                            replace(worker)
                            continue
                        if message[0] == "outcome":
                            summary.record(job, message[1])
                            worker.reported.append(message[1].pipeline)
                            worker.deadline = time.monotonic() + limit
                        else:
                            summary.inputs += 1
                            worker.job = None
                    elif time.monotonic() > worker.deadline:
                        worker.process.kill()
                        worker.process.join()
                        summary.record(job, Outcome(
                            worker.running_pipeline(), "hang", _dump_site(worker.log_tail()),
                            f"no result after {limit:g} s"))
                        summary.inputs += 1
                        replace(worker)
                if progress is not None and time.monotonic() - last_progress > 30:
                    last_progress = time.monotonic()
                    summary.seconds = last_progress - start
                    progress(summary)
        finally:
            for worker in pool:
                worker.stop()
    summary.seconds = time.monotonic() - start
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tilesync.tools.fuzz",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget")
    parser.add_argument("--seed", type=int, default=0, help="campaign seed")
    parser.add_argument("--inputs", type=int, default=None, help="stop after this many")
    parser.add_argument("--workers", type=int, default=None, help="worker processes")
    parser.add_argument("--limit", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--memory-mb", type=int, default=3072, help="per worker (0: none)")
    parser.add_argument("--save", type=Path, help="write one reproducer per site here")
    parser.add_argument("--replay", type=int, metavar="N", help="print input N and exit")
    args = parser.parse_args(argv)
    if args.replay is not None:
        job = make_input(load_seeds(), args.seed, args.replay)
        print(f"// input {job.number} of seed {args.seed}: {job.seed}; "
              f"{', '.join(job.mutations)}")
        sys.stdout.write(job.text)
        return 0

    shown: set[tuple[str, str]] = set()

    def progress(summary: Summary) -> None:
        print(f"[{summary.seconds:.0f} s] {summary.inputs} inputs, {summary.total_runs} runs, "
              f"{summary.failed_runs} failed, {len(summary.failures)} sites", flush=True)
        for key, failure in summary.failures.items():
            if key not in shown:
                shown.add(key)
                print(f"  new: {failure.kind} {failure.site} [input {failure.number}, "
                      f"{failure.pipeline}] {failure.message}", flush=True)

    summary = fuzz(args.seconds, args.seed, args.inputs, args.workers, args.limit,
                   args.memory_mb, progress)
    print(summary.report())
    if args.save is not None:
        for path in summary.save(args.save):
            print(f"wrote {path}")
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
