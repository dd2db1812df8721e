"""Compiling many programs: one fork process pool and one on-disk cache.

    compile_many(jobs, target, processes=None, *, compile_one, key=None, cache=None)
        -> [compile_one(job, target) for job in jobs]
    CompileCache(directory=".tilesync-cache", namespace="ptx")
    source_digest(extra=()) -> str

Generation and lowering are pure Python, one core per program: `compile_many` runs the jobs in
a process pool (fork: the workers inherit the imported compiler), in this process where no
pool can start or the pool breaks. Fork before CUDA or torch start threads; after, `isolated`
runs each job in a fresh interpreter (compile_worker.py) instead.

A cached result is found under sha256(source digest, key(job, target)): the key names the job
(its configuration), the target and the pass list; the source digest names the compiler (its
sources, xDSL's and llvmlite's versions; read once per process), so an edit of the compiler
misses, in the processes started after it, every entry made before it. Entries are written
atomically (a temporary file renamed into place); an entry that cannot be read back is a miss.
Failures are never cached.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

CACHE_DIR = Path(".tilesync-cache")
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
COMPILER_ROOMS = ("compat", "dialects", "analysis", "transforms", "lowering", "kernels",
                  "runtime", "harness", "frontend")
"""The package's folders whose sources decide what a cache entry holds (with its top-level
modules): the emitted code, and what the runtime and the torch front end store beside it (a
piece's entry, a pickled PipelinePlan)."""
COMPILER_DISTRIBUTIONS = ("xdsl", "llvmlite")


def source_digest(extra: Iterable[Path | str] = ()) -> str:
    """sha256 of the compiler: the sources of the package's top-level modules and of
    COMPILER_ROOMS, the versions of xDSL and llvmlite (read once per process: see
    `_compiler_digest`), and the `extra` files (a caller's own program builder)."""
    extra = [Path(p).resolve() for p in extra]
    if not extra:
        return _compiler_digest()
    digest = hashlib.sha256(_compiler_digest().encode())
    for path in extra:
        name = path.relative_to(PACKAGE_ROOT) if path.is_relative_to(PACKAGE_ROOT) else path
        _update(digest, name.as_posix(), str(path))
    return digest.hexdigest()


@cache
def _compiler_digest() -> str:
    """source_digest without extra files, computed once: the compiler a process runs is the
    one it imported, and every cache a compile opens (the torch front end opens three) would
    read and hash its hundred-odd files again. Paths are walked as strings: pathlib's
    per-file objects cost a cached compile 20 ms."""
    root = str(PACKAGE_ROOT)
    names = sorted(name for name in os.listdir(root) if name.endswith(".py"))
    for room in COMPILER_ROOMS:
        found = []
        for folder, dirs, files in os.walk(os.path.join(root, room)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            found += [os.path.relpath(os.path.join(folder, name), root)
                      for name in files if name.endswith(".py")]
        names += sorted(found, key=lambda name: name.split(os.sep))
    digest = hashlib.sha256()
    for name in names:
        _update(digest, name.replace(os.sep, "/"), os.path.join(root, name))
    for name in COMPILER_DISTRIBUTIONS:
        digest.update(f"{name}=={metadata.version(name)}\0".encode())
    return digest.hexdigest()


def _update(digest: Any, name: str, path: str) -> None:
    with open(path, "rb") as f:
        digest.update(f"{name}\0".encode() + f.read() + b"\0")


class CompileCache:
    """Compiled results on disk under `directory/namespace`, one pickle per key.

    `hits` and `misses` count the lookups of this object. `accepts(value)`, where given, says
    whether a stored value is whole (one that is not is a miss, and is compiled again)."""

    def __init__(self, directory: Path | str = CACHE_DIR, namespace: str = "ptx",
                 sources: str | None = None, accepts: Callable[[Any], bool] | None = None):
        self.directory = Path(directory) / namespace
        self.sources = sources if sources is not None else source_digest()
        self.accepts = accepts
        self.hits = 0
        self.misses = 0

    def path(self, key: str) -> Path:
        name = hashlib.sha256(f"{self.sources}\0{key}".encode()).hexdigest()[:32]
        return self.directory / f"{name}.pkl"

    def load(self, key: str) -> tuple[bool, Any]:
        """(True, the stored value) or (False, None): absent, unreadable, or another key's."""
        try:
            with self.path(key).open("rb") as f:
                stored_key, value = pickle.load(f)
            found = stored_key == key and (self.accepts is None or self.accepts(value))
        except Exception:  # absent, truncated, or of classes that no longer load: a miss
            found, value = False, None
        if found:
            self.hits += 1
            return True, value
        self.misses += 1
        return False, None

    def store(self, key: str, value: Any) -> None:
        """Write atomically (readers see the old entry or the new one, never a part); a
        cache that cannot be written is no cache, not an error."""
        path = self.path(key)
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=path.stem,
                                             suffix=".tmp", delete=False) as f:
                tmp = Path(f.name)
                pickle.dump((key, value), f)
            os.replace(tmp, path)
            tmp = None
        except OSError:
            pass
        finally:
            if tmp is not None:
                tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class CompileFailure:
    """What compile_many(..., keep_going=True) returns for a job that raised."""

    message: str


def compile_many(jobs: Iterable[Any], target: str = "sm_90", processes: int | None = None, *,
                 compile_one: Callable[[Any, str], Any],
                 key: Callable[[Any, str], str] | None = None,
                 cache: CompileCache | None = None, keep_going: bool = False,
                 progress: Callable[[int, int], None] | None = None,
                 isolated: bool = False) -> list[Any]:
    """[compile_one(job, target) for job in jobs]: from `cache` where it holds key(job, target),
    the others in a process pool (`processes` workers; 1: here), each stored as it arrives.

    `compile_one` is a module-level function (the pool pickles it by name) with a picklable
    result. A job that raises raises here (compiled again in this process, so the exception
    and its traceback are its own), or with `keep_going` gives a CompileFailure in its place.
    `progress(done, total)` is called after each job. `isolated`: each job in a fresh
    interpreter (compile_worker) instead of a fork of this process, for a caller that must
    not fork (torch's threads, a CUDA context) and whose __main__ must not run again (as
    spawn and forkserver would run a user's unguarded script)."""
    jobs = list(jobs)
    results: list[Any] = [None] * len(jobs)
    keys: dict[int, str] = {}
    missing = []
    for i, job in enumerate(jobs):
        if cache is not None and key is not None:
            keys[i] = key(job, target)
            found, results[i] = cache.load(keys[i])
            if found:
                continue
        missing.append(i)
    done = len(jobs) - len(missing)
    if progress is not None and done:
        progress(done, len(jobs))
    attempts = _attempts(compile_one, [jobs[i] for i in missing], target, processes,
                         catch=keep_going, isolated=isolated)
    for i, result in zip(missing, attempts, strict=True):
        if isinstance(result, CompileFailure) and not keep_going:
            result = compile_one(jobs[i], target)  # raises the job's own exception
        if cache is not None and i in keys and not isinstance(result, CompileFailure):
            cache.store(keys[i], result)
        results[i] = result
        done += 1
        if progress is not None:
            progress(done, len(jobs))
    return results


def _attempts(compile_one: Callable[[Any, str], Any], jobs: Sequence[Any], target: str,
              processes: int | None, catch: bool, isolated: bool = False) -> Iterator[Any]:
    """The results of `jobs` in order, from a fork pool (or fresh interpreters, `isolated`)
    where one runs; a job that raises there gives a CompileFailure (so that a broken pool is
    told apart from a failing job), here it raises unless `catch`."""
    done = 0
    if len(jobs) > 1 and processes != 1:
        workers = min(len(jobs), processes or min(max(1, (os.cpu_count() or 2) - 1), 16))
        pool = _pool(workers, isolated)
        if pool is not None:
            attempt = _isolated_attempt if isolated else _attempt
            try:
                try:
                    for result in pool.map(attempt, [compile_one] * len(jobs), jobs,
                                           [target] * len(jobs)):
                        yield result
                        done += 1
                    return
                finally:
                    pool.shutdown(cancel_futures=True)
            # the pool broke (a worker died, or could not start or answer): the rest here
            except (OSError, RuntimeError, EOFError, pickle.UnpicklingError,
                    subprocess.SubprocessError):
                pass
    for job in jobs[done:]:
        yield _attempt(compile_one, job, target) if catch else compile_one(job, target)


def _pool(workers: int, isolated: bool) -> Any:
    """A fork pool of `workers` processes, or with `isolated` threads that each wait on a
    fresh interpreter; None where no fork pool can start. Imported here: a compile whose
    results are all cached starts no pool, and the pools' modules cost it 15 ms."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    if isolated:
        return ThreadPoolExecutor(workers, thread_name_prefix="tilesync-compile")
    try:
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    except (OSError, ValueError, ImportError, RuntimeError):  # no fork or no semaphores
        return None


WORKER_TIMEOUT_S = 3600.0
"""A fresh interpreter's compile that runs longer is stopped (and its job compiled here): a
stack's pipeline takes a minute on a slow host; no compile should ever hang its caller."""


def _isolated_attempt(compile_one: Callable[[Any, str], Any], job: Any, target: str) -> Any:
    """`_attempt` in a fresh interpreter (python -m tilesync.harness.compile_worker) that
    imports what this one would (its sys.path)."""
    payload = pickle.dumps((compile_one.__module__, compile_one.__qualname__, job, target))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-m", "tilesync.harness.compile_worker"],
                          input=payload, capture_output=True, env=env, check=False,
                          timeout=WORKER_TIMEOUT_S)
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise OSError(f"the compile worker exited with {done.returncode}"
                      + (f": {lines[-1]}" if lines else ""))
    return pickle.loads(done.stdout)


def _attempt(compile_one: Callable[[Any, str], Any], job: Any, target: str) -> Any:
    try:
        return compile_one(job, target)
    except Exception as exc:
        return CompileFailure(f"{type(exc).__name__}: {exc}")


__all__ = ["CACHE_DIR", "CompileCache", "CompileFailure", "compile_many", "source_digest"]
