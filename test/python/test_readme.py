"""The README works as written: its Python blocks run as doctests and its shell commands run
(those that need a GPU only where one is; without one, `bench` must give one clean line)."""

import doctest
import os
import re
import subprocess
from pathlib import Path

import pytest

from tilesync.runtime.device import gpu_available

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == language]


def shell_commands() -> list[str]:
    """Each command of the README's sh blocks (continuation lines joined), but `make test`,
    which is the run this test is part of."""
    commands = []
    for body in blocks("sh"):
        for command in body.replace("\\\n", " ").splitlines():
            if command.strip() and not command.lstrip().startswith("#") \
                    and not command.startswith("make test"):
                commands.append(command)
    return commands


def test_the_readme_has_python_and_shell_examples():
    assert len(blocks("python")) >= 2 and len(shell_commands()) >= 8


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def test_python_blocks_run_as_doctests(monkeypatch):
    monkeypatch.chdir(ROOT)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs: dict = {}  # the blocks share names, as a reader typing them in one session would
    for number, body in enumerate(blocks("python")):
        assert ">>>" in body, f"README python block {number} is not a doctest"
        if "import torch" in body and not _has_torch():
            continue  # the torch quick start needs torch (the dev extra installs it)
        test = parser.get_doctest(body, globs, f"README[{number}]", "README.md", 0)
        runner.run(test, clear_globs=False)
        globs = test.globs
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("command", shell_commands())
def test_shell_command(command):
    needs_gpu = " bench" in command
    has_gpu = gpu_available()[0]
    if needs_gpu and has_gpu:
        pytest.skip("a benchmark run takes minutes; `tilesync bench` is exercised on GPUs")
    # as a user's shell runs it: not inside `make test`'s make (whose MAKELEVEL would make the
    # inner make print "Entering directory")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"
    proc = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)
    if needs_gpu:  # no GPU here: one clean line, exit 1
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.count("\n") == 1 and "no usable NVIDIA GPU" in proc.stderr
        return
    assert proc.returncode == 0, f"{command}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr
    if command.startswith("make demo"):  # only what the user needs: no build banners
        output = proc.stdout + proc.stderr
        assert "setuptools" not in output and "*****" not in output
        if not has_gpu:
            assert [line.split(":")[0] for line in output.splitlines()] == \
                ["copy_chain.mlir", "synthetic_chain.mlir", "no GPU here (no NVIDIA driver"]
