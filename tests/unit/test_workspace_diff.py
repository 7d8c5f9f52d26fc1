"""The workspace diff never follows a link and never opens anything but a regular file inside
the workspace. The diff runs on the host as root, so each planted entry below would otherwise
put a host file into the prediction (or hang the harness on a fifo).

Targets outside are *fifos* without a writer wherever possible: opening one to read would
block (or, with O_NONBLOCK, collect an empty file), so "discarded with the link reason,
promptly" proves it was never opened; regular secret files prove nothing of them is copied.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from bench.frameworks.registry import get_framework
from harness.sandbox.base import SandboxError
from harness.sandbox.workspace import LINK_REASON, MAX_TEST_FILE_BYTES, NotCollected, Workspace, collect_file

SECRET = "ground-truth: do not leak\n"


def _workspace(tmp_path: Path) -> Workspace:
    view = tmp_path / "view"
    (view / "features" / "steps").mkdir(parents=True)
    (view / "features" / "steps" / "given_steps.py").write_text("from behave import given\n")
    (view / "features" / "a.feature").write_text("Feature: a\n")
    (view / "src").mkdir()
    (view / "src" / "lib.py").write_text("X = 1\n")
    return Workspace.create(view, tmp_path / "ws", tmp_path / "history.git", "features", get_framework("behave").test_area(view, "features"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host directory outside the workspace: a secret file and a fifo nobody writes to."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.py").write_text(SECRET)
    os.mkfifo(host / "trap.py")
    return host


def _diff_within(workspace: Workspace, seconds: float = 20):
    """diff() in a thread: a blocking open of a fifo would show up as a hang, not a pass."""
    result: dict[str, object] = {}
    thread = threading.Thread(target=lambda: result.setdefault("diff", workspace.diff()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "diff() blocked: it opened something it must not"
    return result["diff"]


def _no_secret(diff) -> None:
    assert all(SECRET not in text for text in diff.test_files.values())
    assert all(SECRET not in reason for reason in diff.discarded.values())


def test_link_to_a_file_outside_is_discarded_unread(tmp_path: Path, outside: Path) -> None:
    workspace = _workspace(tmp_path)
    steps = workspace.root / "features" / "steps"
    (steps / "leak_steps.py").symlink_to(outside / "secret.py")
    (steps / "trap_steps.py").symlink_to(outside / "trap.py")
    (steps / "shadow_steps.py").symlink_to("/etc/shadow")
    (workspace.root / "src" / "data.txt").symlink_to(outside / "trap.py")  # not test code: still a link
    (steps / "real_steps.py").write_text("from behave import then\n")
    diff = _diff_within(workspace)
    assert diff.test_files == {"features/steps/real_steps.py": "from behave import then\n"}
    for name in ("features/steps/leak_steps.py", "features/steps/trap_steps.py", "features/steps/shadow_steps.py",
                 "src/data.txt"):
        assert diff.discarded[name] == LINK_REASON
    _no_secret(diff)


def test_regular_file_replaced_by_a_link_is_discarded(tmp_path: Path, outside: Path) -> None:
    workspace = _workspace(tmp_path)
    original = workspace.root / "features" / "steps" / "given_steps.py"
    original.unlink()
    original.symlink_to(outside / "trap.py")  # git: type change (T)
    diff = _diff_within(workspace)
    assert diff.discarded == {"features/steps/given_steps.py": LINK_REASON}
    assert diff.test_files == {}


def test_link_to_a_directory_outside_is_discarded_unread(tmp_path: Path, outside: Path) -> None:
    workspace = _workspace(tmp_path)
    (workspace.root / "features" / "more").symlink_to(outside, target_is_directory=True)
    steps = workspace.root / "features" / "steps"
    for child in steps.iterdir():
        child.unlink()
    steps.rmdir()
    steps.symlink_to(outside, target_is_directory=True)  # the whole steps directory, replaced
    diff = _diff_within(workspace)
    assert diff.test_files == {}
    assert diff.discarded["features/more"] == LINK_REASON
    assert diff.discarded["features/steps"] == LINK_REASON
    assert "deleted" in diff.discarded["features/steps/given_steps.py"]
    assert not any(path.startswith(("features/more/", "features/steps/secret", "features/steps/trap"))
                   for path in [*diff.test_files, *diff.discarded])
    _no_secret(diff)


def test_directory_swapped_for_a_link_after_git_looked_is_not_followed(tmp_path: Path, outside: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: git lists features/steps/secret.py while it is a regular file in a real
    directory; before it is read, the directory becomes a link to the host. The read walks
    the path with O_NOFOLLOW, so it stops at the link."""
    workspace = _workspace(tmp_path)
    steps = workspace.root / "features" / "steps"
    (steps / "secret.py").write_text("x = 1\n")
    (steps / "trap.py").write_text("y = 1\n")
    listed = Workspace._changes

    def swap_after_listing(self: Workspace) -> list[tuple[str, str]]:
        changes = listed(self)
        real = workspace.root / "features" / "real_steps"
        steps.rename(real)
        steps.symlink_to(outside, target_is_directory=True)
        return changes

    monkeypatch.setattr(Workspace, "_changes", swap_after_listing)
    diff = _diff_within(workspace)
    assert diff.test_files == {}
    for name in ("features/steps/secret.py", "features/steps/trap.py"):
        assert diff.discarded[name] == ("'steps' on its path is a symbolic link: not collected "
                                        "(links are never followed)")
    _no_secret(diff)


def test_fifo_socket_and_oversized_or_binary_files_are_discarded(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    steps = workspace.root / "features" / "steps"
    os.mkfifo(steps / "pipe_steps.py")
    os.mkfifo(workspace.root / "src" / "pipe")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(steps / "sock_steps.py"))
        (steps / "big_steps.py").write_text("#" * (MAX_TEST_FILE_BYTES + 1))
        (steps / "latin1_steps.py").write_bytes(b"# caf\xe9\n")
        (steps / "ok_steps.py").write_text("# café\n")
        diff = _diff_within(workspace)
    assert diff.test_files == {"features/steps/ok_steps.py": "# café\n"}
    assert diff.discarded["features/steps/pipe_steps.py"] == "not a regular file (fifo): not collected"
    assert diff.discarded["src/pipe"] == "not a regular file (fifo): not collected"
    assert diff.discarded["features/steps/sock_steps.py"] == "not a regular file (socket): not collected"
    assert diff.discarded["features/steps/big_steps.py"].startswith("larger than 1 MiB")
    assert diff.discarded["features/steps/latin1_steps.py"].startswith("not UTF-8 text")
    assert _diff_within(workspace) == diff  # diffing twice changes nothing


def test_collect_file_refuses_links_anywhere_on_the_path(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.py").write_text("ok\n")
    (root / "a" / "link").symlink_to(outside, target_is_directory=True)
    (root / "top").symlink_to(outside, target_is_directory=True)
    assert collect_file(root, "a/f.py") == "ok\n"
    for path in ("a/link/secret.py", "top/secret.py", "top/trap.py"):
        with pytest.raises(NotCollected, match="on its path is a symbolic link"):
            collect_file(root, path)
    for path in ("../host/secret.py", "a/../top/secret.py", "/etc/passwd"):
        with pytest.raises(NotCollected, match="not a plain relative path"):
            collect_file(root, path)


def test_sandbox_file_api_refuses_fifos(tmp_path: Path) -> None:
    """The agent's read_file/write_file tools on a fifo it made: refused at once, not a hang."""
    from harness.sandbox.base import HostWorkspaceFiles

    workspace = _workspace(tmp_path)
    os.mkfifo(workspace.root / "features" / "steps" / "pipe.py")
    files = HostWorkspaceFiles()
    files.workspace = workspace.root
    with pytest.raises(SandboxError, match="not a regular file"):
        files.read_file("features/steps/pipe.py")
    with pytest.raises(SandboxError, match="not a regular file"):
        files.write_file("/workspace/features/steps/pipe.py", "x")
