"""Files written whole or not at all (engine/files/atomic.py): the target appears only when its
writing ends without an error, and nothing is left beside it either way. Checked by reading the
folder after a write that succeeds and one that fails halfway (a bundle's zip is written this way:
a reader never sees half a bundle)."""

from __future__ import annotations

import pytest

from psyq.engine.files.atomic import atomic_file, write_bytes_atomic


def test_a_write_that_fails_halfway_leaves_the_target_as_it_was_and_nothing_beside_it(tmp_path):
    target = tmp_path / "run.zip"
    write_bytes_atomic(target, b"the bundle before")
    with pytest.raises(RuntimeError):
        with atomic_file(target) as handle:
            handle.write(b"half of a new bun")
            raise RuntimeError("the disk is full")
    assert target.read_bytes() == b"the bundle before"
    assert [p.name for p in tmp_path.iterdir()] == ["run.zip"]


def test_a_write_in_pieces_replaces_the_target_whole(tmp_path):
    target = tmp_path / "run.zip"
    write_bytes_atomic(target, b"old")
    with atomic_file(target) as handle:
        for piece in (b"P", b"K", b"\x03\x04"):
            handle.write(piece)
        assert target.read_bytes() == b"old"          # not replaced until the block ends
    assert target.read_bytes() == b"PK\x03\x04" and [p.name for p in tmp_path.iterdir()] == ["run.zip"]
