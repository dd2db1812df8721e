"""docs/ARCHITECTURE.md stays true: every registered pass is in its table, with a source file
and FileCheck tests that exist, and every file it names exists."""

import re
from pathlib import Path

from tilesync.transforms import get_all_passes

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
FILECHECK = ROOT / "test" / "filecheck"


def pass_rows() -> dict[str, tuple[str, list[str]]]:
    """pass name → (source file, test globs) from the passes table."""
    rows = {}
    for line in DOC.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[1].endswith(".py`"):
            continue
        name = re.match(r"`([\w-]+)`", cells[0])
        if name:
            rows[name.group(1)] = (cells[1].strip("`"), re.findall(r"`([^`]+)`", cells[2]))
    return rows


def test_every_registered_pass_has_a_row():
    rows = pass_rows()
    missing = sorted(set(get_all_passes()) - set(rows))
    assert not missing, f"passes missing from docs/ARCHITECTURE.md: {missing}"


def test_each_row_names_its_source_and_tests():
    for name, (source, tests) in pass_rows().items():
        assert (ROOT / source).is_file(), f"{name}: {source} does not exist"
        assert tests, f"{name}: no FileCheck test named"
        folder = None
        for pattern in tests:
            if "/" in pattern:
                folder = str(Path(pattern).parent)
            else:
                pattern = f"{folder}/{pattern}"
            assert list(FILECHECK.glob(pattern)), f"{name}: no test matches {pattern}"


def test_every_file_it_names_exists():
    named = set(re.findall(r"`((?:[\w.]+/)*[\w.]+\.(?:py|md|json))`", DOC))
    named |= {m.rstrip("/") for m in re.findall(r"`((?:[\w]+/)+)`", DOC)}
    absent = [p for p in named if "/" in p or p.endswith(".py")
              if not (ROOT / p).exists() and not (FILECHECK / p).exists()]
    assert not absent, f"docs/ARCHITECTURE.md names files that do not exist: {absent}"
