"""One compile job in a fresh interpreter: `python -m tilesync.harness.compile_worker`.

stdin: pickle of (module, qualified name of the compile function, job, target); fd 1 at start:
the pickled result of compile_cache._attempt (a CompileFailure where the job raised). Whatever
the job prints, Python or native code, goes to stderr: fd 1 is pointed there while it runs.
"""

from __future__ import annotations

import importlib
import os
import pickle
import sys


def main() -> int:
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    module, qualname, job, target = pickle.load(sys.stdin.buffer)
    compile_one = importlib.import_module(module)
    for part in qualname.split("."):
        compile_one = getattr(compile_one, part)
    from tilesync.harness.compile_cache import _attempt

    with os.fdopen(result_fd, "wb") as out:
        pickle.dump(_attempt(compile_one, job, target), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
