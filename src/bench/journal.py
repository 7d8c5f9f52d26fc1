"""Append-only JSONL journals: what makes every long req2test run resumable.

One record a line, each line flushed and fsynced before the caller moves on, so a kill -9
loses at most the line being written. That torn last line is dropped when the journal is
opened (its unit is simply done again); a bad line anywhere else is corruption and an error.
Evaluation results, predictions, enrichments and selections all use this one module.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from bench.errors import UserError

Record = TypeVar("Record", bound=BaseModel)


class JournalError(UserError):
    """A journal line that is neither valid nor the torn tail of a kill; one line."""


def append_line(path: Path, line: str) -> None:
    """Append one line and make it durable before returning."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line.rstrip("\n") + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def drop_torn_tail(path: Path) -> None:
    """A kill mid-write leaves a partial last line: cut it so the next append starts a fresh line."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])


def read_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, is the last line) of every non-empty line."""
    if not path.is_file():
        return
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield number, line, number == len(lines)


def read_dicts(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a journal, skipping a torn tail (and, leniently, any bad line)."""
    for _, line, _ in read_lines(path):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


class Journal(Generic[Record]):
    """A journal of pydantic records with a key (the last record of a key wins); thread-safe."""

    def __init__(self, path: Path, model: type[Record], key: Callable[[Record], str], strict: bool = True,
                 repair: bool = True) -> None:
        """``strict``: a bad line other than the last is a JournalError (else it is skipped).
        ``repair``: cut a torn tail now (a writer does; a reader leaves the file as it is)."""
        self.path = path
        self.model = model
        self.key = key
        self.lock = threading.Lock()
        self.done: dict[str, Record] = {}
        for number, line, last in read_lines(path):
            try:
                record = model.model_validate_json(line)
            except ValidationError:
                if last or not strict:
                    continue  # the line a kill cut short: that unit is done again
                raise JournalError(f"{path}:{number}: corrupt {model.__name__} line") from None
            self.done[key(record)] = record
        if repair:
            drop_torn_tail(path)

    def append(self, record: Record, line: str | None = None) -> None:
        """Journal ``record`` (``line``: its JSON when the caller had to clean it first)."""
        with self.lock:
            append_line(self.path, line if line is not None else record.model_dump_json())
            self.done[self.key(record)] = record
