"""bench.journal: the one append-only JSONL journal every resumable run writes through."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from pydantic import BaseModel

from bench.journal import Journal, JournalError, append_line, drop_torn_tail, read_dicts

SRC = Path(__file__).resolve().parents[2] / "src"


class Item(BaseModel):
    key: str
    value: int


def test_a_torn_tail_is_dropped_and_the_next_append_starts_a_fresh_line(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text('{"key": "a", "value": 1}\n{"key": "b", "val')  # a kill mid-write
    journal = Journal(path, Item, key=lambda item: item.key)
    assert list(journal.done) == ["a"]
    assert path.read_text() == '{"key": "a", "value": 1}\n'
    journal.append(Item(key="b", value=2))
    assert Journal(path, Item, key=lambda item: item.key).done == {"a": Item(key="a", value=1),
                                                                   "b": Item(key="b", value=2)}


def test_a_bad_line_before_the_last_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text('{"key": "a", "value": 1}\nnot json\n{"key": "b", "value": 2}\n')
    with pytest.raises(JournalError, match=r"j.jsonl:2: corrupt Item line"):
        Journal(path, Item, key=lambda item: item.key)
    assert set(Journal(path, Item, key=lambda item: item.key, strict=False).done) == {"a", "b"}


def test_readers_leave_the_file_alone_and_the_last_record_of_a_key_wins(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text('{"key": "a", "value": 1}\n{"key": "a", "value": 3}\n{"key": "c"')
    reader = Journal(path, Item, key=lambda item: item.key, repair=False)
    assert reader.done == {"a": Item(key="a", value=3)} and path.read_text().endswith('{"key": "c"')
    assert [d["value"] for d in read_dicts(path)] == [1, 3]
    drop_torn_tail(path)
    assert path.read_text().endswith("3}\n")


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    journal = Journal(path, Item, key=lambda item: item.key)
    threads = [threading.Thread(target=lambda n=n: [journal.append(Item(key=f"{n}-{i}", value=i)) for i in range(50)])
               for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(Journal(path, Item, key=lambda item: item.key).done) == 200
    append_line(path, '{"key": "z", "value": 0}')
    assert path.read_text().count("\n") == 201


def test_every_journal_of_the_tree_goes_through_this_module() -> None:
    """Six hand-written copies of fsync-and-recover existed; a new one must not appear."""
    writers = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                     if "resources" not in p.parts and re.search(r"os\.fsync\(", p.read_text(encoding="utf-8")))
    assert writers == ["bench/journal.py"]
