"""harness/compile_cache.py: the process pool (and its fallback to this process) and the on-disk
cache (hits, misses after a change of the compiler's sources, atomic writes, broken entries),
and their users: compile_ptx_many and the MLP bench's compile_jobs."""

from __future__ import annotations

import os
import pickle
from concurrent.futures.process import BrokenProcessPool

import pytest

from tilesync.harness import compile_cache as cc

CALLS: list[int] = []


def _square(job: int, target: str) -> tuple[int, str]:
    CALLS.append(job)
    return job * job, target


def _pid(job: int, target: str) -> int:
    return os.getpid()


def _odd_fails(job: int, target: str) -> int:
    if job % 2:
        raise ValueError(f"job {job} is odd")
    return job


def _key(job: int, target: str) -> str:
    return repr((job, target, ("pass-a", "pass-b")))


@pytest.fixture(autouse=True)
def _no_calls():
    CALLS.clear()


def test_a_second_run_is_served_from_the_cache(tmp_path):
    first = cc.CompileCache(tmp_path, "test", sources="s1")
    got = cc.compile_many([1, 2, 3], "sm_80", 1, compile_one=_square, key=_key, cache=first)
    assert got == [(1, "sm_80"), (4, "sm_80"), (9, "sm_80")]
    assert CALLS == [1, 2, 3] and (first.hits, first.misses) == (0, 3)
    assert len(list((tmp_path / "test").glob("*.pkl"))) == 3

    again = cc.CompileCache(tmp_path, "test", sources="s1")
    CALLS.clear()
    assert cc.compile_many([3, 1, 4], "sm_80", 1, compile_one=_square, key=_key,
                           cache=again) == [(9, "sm_80"), (1, "sm_80"), (16, "sm_80")]
    assert CALLS == [4] and (again.hits, again.misses) == (2, 1)
    # the target is part of the key
    CALLS.clear()
    cc.compile_many([1], "sm_90", 1, compile_one=_square, key=_key, cache=again)
    assert CALLS == [1]


def test_a_change_of_the_compilers_sources_misses(tmp_path):
    old = cc.CompileCache(tmp_path, "test", sources="before")
    cc.compile_many([5], compile_one=_square, key=_key, cache=old)
    new = cc.CompileCache(tmp_path, "test", sources="after")
    CALLS.clear()
    cc.compile_many([5], compile_one=_square, key=_key, cache=new)
    assert CALLS == [5] and new.misses == 1


def test_the_source_digest_covers_the_compiler_and_extra_files(tmp_path):
    digest = cc.source_digest()
    assert digest == cc.source_digest() and len(digest) == 64
    builder = tmp_path / "builder.py"
    builder.write_text("x = 1\n")
    with_extra = cc.source_digest(extra=[builder])
    assert with_extra != digest
    builder.write_text("x = 2\n")
    assert cc.source_digest(extra=[builder]) != with_extra
    covered = {p.relative_to(cc.PACKAGE_ROOT).parts[0] for room in cc.COMPILER_ROOMS
               for p in (cc.PACKAGE_ROOT / room).rglob("*.py")}
    # what a cache entry holds is decided by the runtime (a pickled PipelinePlan) and the torch
    # front end (a piece's entry) too
    assert {"dialects", "transforms", "lowering", "kernels", "runtime", "frontend"} <= covered


def test_the_compilers_sources_are_read_once_per_process(tmp_path, monkeypatch):
    """Every cache a compile opens digests the compiler: its files are read by the first only
    (the process runs the compiler it imported); extra files are read every time."""
    read = []
    update = cc._update
    monkeypatch.setattr(cc, "_update", lambda digest, name, path: read.append(path) or
                        update(digest, name, path))
    cc._compiler_digest.cache_clear()
    first = cc.source_digest()
    assert len(read) > 10
    read.clear()
    builder = tmp_path / "builder.py"
    builder.write_text("x = 1\n")
    assert cc.source_digest() == first and cc.CompileCache(tmp_path, "test").sources == first
    assert cc.source_digest(extra=[builder]) != first and read == [str(builder)]


def test_a_broken_entry_is_a_miss_and_is_rewritten(tmp_path):
    cache = cc.CompileCache(tmp_path, "test", sources="s")
    cache.store(_key(7, "sm_90"), (49, "sm_90"))
    path = cache.path(_key(7, "sm_90"))
    path.write_bytes(path.read_bytes()[:10])  # truncated, as by a crash without the rename
    assert cache.load(_key(7, "sm_90")) == (False, None)
    assert cc.compile_many([7], compile_one=_square, key=_key, cache=cache) == [(49, "sm_90")]
    assert CALLS == [7]
    assert cache.load(_key(7, "sm_90")) == (True, (49, "sm_90"))
    # an entry of another key (a hash collision, a hand-copied file) is a miss too
    path.write_bytes(pickle.dumps(("another key", 0)))
    assert cache.load(_key(7, "sm_90")) == (False, None)


def test_a_value_the_cache_does_not_accept_is_a_miss(tmp_path):
    cache = cc.CompileCache(tmp_path, "test", sources="s",
                            accepts=lambda value: isinstance(value, tuple) and len(value) == 2)
    cache.store(_key(7, "sm_90"), {"damaged": True})
    assert cache.load(_key(7, "sm_90")) == (False, None) and cache.misses == 1
    assert cc.compile_many([7], compile_one=_square, key=_key, cache=cache) == [(49, "sm_90")]
    assert CALLS == [7] and cache.load(_key(7, "sm_90")) == (True, (49, "sm_90"))


def test_a_failed_write_leaves_the_old_entry_and_no_temporary_file(tmp_path, monkeypatch):
    cache = cc.CompileCache(tmp_path, "test", sources="s")
    cache.store("k", "old")

    def no_rename(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(cc.os, "replace", no_rename)
    cache.store("k", "new")  # no error: a cache that cannot be written is no cache
    assert cache.load("k") == (True, "old")
    assert [p.name for p in (tmp_path / "test").iterdir()] == [cache.path("k").name]


def test_failures_raise_their_own_exception_or_are_kept_and_not_cached(tmp_path):
    for processes in (1, 2):
        with pytest.raises(ValueError, match="job 3 is odd"):
            cc.compile_many([2, 3, 4], processes=processes, compile_one=_odd_fails)
        cache = cc.CompileCache(tmp_path, f"test{processes}", sources="s")
        got = cc.compile_many([2, 3], processes=processes, compile_one=_odd_fails, key=_key,
                              cache=cache, keep_going=True)
        assert got == [2, cc.CompileFailure("ValueError: job 3 is odd")]
        assert cache.load(_key(2, "sm_90")) == (True, 2)
        assert cache.load(_key(3, "sm_90")) == (False, None)


def test_jobs_run_in_worker_processes():
    pids = cc.compile_many(range(4), processes=2, compile_one=_pid)
    assert len(pids) == 4 and os.getpid() not in pids


def test_without_a_pool_the_jobs_run_here(monkeypatch):
    def no_fork(method):
        raise ValueError(f"cannot find context for {method!r}")

    monkeypatch.setattr("multiprocessing.get_context", no_fork)
    assert cc.compile_many(range(4), processes=2, compile_one=_pid) == [os.getpid()] * 4


def test_a_pool_that_breaks_leaves_the_rest_to_this_process(monkeypatch):
    class BreaksAfterOne:
        def __init__(self, *args, **kwargs):
            pass

        def map(self, fn, *iterables):
            yield fn(*(next(iter(it)) for it in iterables))
            raise BrokenProcessPool("a worker died")

        def shutdown(self, **kwargs):
            pass

    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", BreaksAfterOne)
    seen = []
    got = cc.compile_many([1, 2, 3], processes=2, compile_one=_square,
                          progress=lambda done, total: seen.append((done, total)))
    assert got == [(1, "sm_90"), (4, "sm_90"), (9, "sm_90")]
    assert CALLS == [1, 2, 3]  # job 1 by the "pool", jobs 2 and 3 here, each once
    assert seen == [(1, 3), (2, 3), (3, 3)]


def _loud_pid(job: int, target: str) -> tuple[int, int, str]:
    print("a job that prints")  # to the worker's stderr, not into its result
    os.write(1, b"native output\n")
    return job, os.getpid(), target


def test_isolated_jobs_run_in_fresh_interpreters():
    got = cc.compile_many([1, 2, 3], "sm_90a", processes=2, compile_one=_loud_pid,
                          isolated=True)
    assert [(job, target) for job, _, target in got] == [(1, "sm_90a"), (2, "sm_90a"),
                                                         (3, "sm_90a")]
    pids = {pid for _, pid, _ in got}
    assert len(pids) == 3 and os.getpid() not in pids  # one interpreter a job, not forks
    assert CALLS == []
    with pytest.raises(ValueError, match="job 3 is odd"):  # raised again here, as its own
        cc.compile_many([2, 3], processes=2, compile_one=_odd_fails, isolated=True)
    assert cc.compile_many([2, 3], processes=2, compile_one=_odd_fails, isolated=True,
                           keep_going=True) == [2, cc.CompileFailure("ValueError: job 3 is odd")]


def test_an_isolated_worker_that_cannot_run_leaves_the_jobs_to_this_process(monkeypatch):
    monkeypatch.setattr(cc.sys, "executable", "/nonexistent/python")
    got = cc.compile_many([1, 2], processes=2, compile_one=_square, isolated=True)
    assert got == [(1, "sm_90"), (4, "sm_90")] and CALLS == [1, 2]
    monkeypatch.undo()

    def nested(job, target):  # not importable by name: the worker exits non-zero
        return _square(job, target)

    CALLS.clear()
    assert cc.compile_many([3, 4], processes=2, compile_one=nested, isolated=True) == \
        [(9, "sm_90"), (16, "sm_90")] and CALLS == [3, 4]
    CALLS.clear()
    monkeypatch.setattr(cc, "WORKER_TIMEOUT_S", 1e-3)  # a worker past its time is stopped
    assert cc.compile_many([5, 6], processes=2, compile_one=_square, isolated=True) == \
        [(25, "sm_90"), (36, "sm_90")] and CALLS == [5, 6]


def test_compile_ptx_many_caches_kernel_ptx(tmp_path, monkeypatch):
    from tilesync.harness import compile as kc
    from tilesync.kernels.config import gemm_config, softmax_config

    configs = [gemm_config(64, 64, 64, tile=(64, 64, 32), stages=2),
               softmax_config(64, 512)]
    ptx = kc.compile_ptx_many(configs, processes=1, cache_dir=tmp_path)
    assert ptx == [kc.compile_kernel(c).ptx for c in configs]
    assert len(list((tmp_path / "ptx").glob("*.pkl"))) == 2

    def must_not_compile(cfg, target="sm_90", validate=False, keep_ir=False):
        raise AssertionError(f"compiled {cfg} again")

    monkeypatch.setattr(kc, "compile_kernel", must_not_compile)
    assert kc.compile_ptx_many(configs, processes=1, cache_dir=tmp_path) == ptx


def _fake_mlp_job(job: tuple, target: str = "sm_90") -> dict:
    if job[2] == "row+pdl":
        raise RuntimeError("no guarantee")
    return {"job": job, "ptx_by_module": {}, "target": target}


def test_mlp_compile_jobs_cache_programs_but_not_failures(tmp_path, monkeypatch):
    from tilesync.bench import mlp as bench

    monkeypatch.setattr(bench, "compile_job", _fake_mlp_job)
    jobs = [("gpt3", 256, "stream_sync", False), ("gpt3", 256, "row+pdl", False)]
    cache = bench.mlp_cache(tmp_path)
    out = bench.compile_jobs(jobs + jobs[:1], processes=1, cache=cache)
    assert list(out) == jobs  # duplicates compiled once
    assert out[jobs[0]]["job"] == jobs[0]
    assert out[jobs[1]] == {"job": jobs[1], "error": "compile: RuntimeError: no guarantee"}
    again = bench.mlp_cache(tmp_path)
    bench.compile_jobs(jobs, processes=1, cache=again)
    assert (again.hits, again.misses) == (1, 1)
    assert cache.directory == tmp_path / "mlp"
