"""The emitted PTX of every example and benchmark configuration equals the record
(test/python/data/ptx_digests.json): a refactor that changes code generation fails here.
After an intended change, record again: `python -m tilesync.tools.ptx_digests --write`."""

import json

from tilesync.tools import ptx_digests


def test_every_program_compiles_to_the_recorded_ptx():
    recorded = json.loads(ptx_digests.RECORD.read_text())
    now = ptx_digests.digests(ptx_digests.GROUPS, processes=2)
    assert set(now) == set(recorded), "programs added or removed: record again with --write"
    assert not [v for v in now.values() if v.startswith("error")]
    assert ptx_digests.compare(recorded, now) == []


def test_a_changed_digest_is_reported():
    assert ptx_digests.compare({"a": "1" * 64, "b": "2" * 64}, {"a": "1" * 64, "b": "3" * 64}) \
        == [f"changed: b: {'2' * 16} -> {'3' * 16}"]
    assert ptx_digests.compare({}, {"c": "4" * 64}) == ["new: c"]
