"""Running a CLI's main in this process, for the tests of what it prints (on the path through
pyproject's `pythonpath`)."""

from __future__ import annotations

import contextlib
import io


def run_cli(main, argv: list[str]) -> tuple[int, str, str]:
    """A CLI's exit status, stdout and stderr, run in this process."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue(), err.getvalue()


def one_line(text: str) -> str:
    """`text` as the one line a bad input prints (no traceback)."""
    assert text.count("\n") == 1 and "Traceback" not in text, text
    return text.rstrip("\n")
