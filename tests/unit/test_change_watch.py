"""The evaluation worker's change watch: one read says whether the workspace may have changed.

Real inotify on a real tree; every change a run could make to the workspace must be seen
(a missed one would let a run leave state for the next), and "nothing happened" must say so.
"""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.frameworks.behave.change_watch import ChangeWatch


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "features" / "steps").mkdir(parents=True)
    (tmp_path / "features" / "steps" / "s.py").write_text("x = 1\n")
    (tmp_path / "data.txt").write_text("abcdef\n")
    (tmp_path / "prod").mkdir()
    (tmp_path / "prod" / "m.py").write_text("y = 2\n")
    return tmp_path


def watch_of(tree: Path) -> ChangeWatch:
    watch = ChangeWatch(str(tree), skip=[str(tree / "prod")])
    assert watch.complete, "inotify is available on these machines"
    assert not watch.changed()
    return watch


def test_nothing_happened_reads_as_unchanged(tree: Path) -> None:
    watch = watch_of(tree)
    (tree / "data.txt").read_text()  # reading is no change
    os.listdir(tree / "features")
    assert not watch.changed()


@pytest.mark.parametrize("change", ["write", "create_deep", "delete", "rename", "chmod", "utime", "mkdir",
                                    "truncate", "hardlink", "symlink"])
def test_every_kind_of_change_is_seen_once(tree: Path, change: str) -> None:
    watch = watch_of(tree)
    target = tree / "features" / "steps" / "s.py"
    {
        "write": lambda: target.write_text("x = 2\n"),
        "create_deep": lambda: (tree / "features" / "steps" / "new.py").write_text(""),
        "delete": lambda: target.unlink(),
        "rename": lambda: target.rename(tree / "features" / "moved.py"),
        "chmod": lambda: target.chmod(0o600),
        "utime": lambda: os.utime(target, (1, 1)),
        "mkdir": lambda: (tree / "features" / "steps" / "d").mkdir(),
        "truncate": lambda: os.truncate(tree / "data.txt", 0),
        "hardlink": lambda: os.link(target, tree / "features" / "alias.py"),
        "symlink": lambda: os.symlink("/etc/passwd", tree / "features" / "steps" / "l"),
    }[change]()
    assert watch.changed()
    assert not watch.changed(), "events are drained by the read"


def test_a_shared_mapping_written_after_its_descriptor_closed_is_seen_once_the_writer_exits(tree: Path) -> None:
    """No write() and no new entry: only the mapping's release at exit raises an event."""
    watch = watch_of(tree)
    code = textwrap.dedent(f"""
        import mmap, os
        fd = os.open({str(tree / "data.txt")!r}, os.O_RDWR)
        m = mmap.mmap(fd, 0)
        os.close(fd)
        m[0:3] = b"XYZ"
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (tree / "data.txt").read_bytes().startswith(b"XYZ")
    assert watch.changed()


def test_a_mapping_still_held_says_so_when_released(tree: Path) -> None:
    watch = watch_of(tree)
    fd = os.open(tree / "data.txt", os.O_RDWR)
    mapped = mmap.mmap(fd, 0)
    os.close(fd)
    mapped[0:1] = b"Q"
    mapped.close()
    assert watch.changed()


def test_read_only_mounts_given_as_skip_are_not_watched(tree: Path) -> None:
    watch = watch_of(tree)
    (tree / "prod" / "m.py").write_text("y = 3\n")  # the root dir's watch does not see inside prod/
    assert not watch.changed()


def test_after_rearming_only_new_changes_count(tree: Path) -> None:
    watch = watch_of(tree)
    (tree / "features" / "steps" / "d").mkdir()
    watch.arm()
    assert not watch.changed()
    (tree / "features" / "steps" / "d" / "f").write_text("")  # the new directory is watched now
    assert watch.changed()


def test_without_inotify_every_question_is_answered_changed(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bench.frameworks.behave.change_watch._libc", lambda: None)
    watch = ChangeWatch(str(tree), skip=[])
    assert not watch.complete
    assert watch.changed() and watch.changed()


def test_a_closed_watch_answers_changed(tree: Path) -> None:
    watch = watch_of(tree)
    watch.close()
    assert watch.changed()
