"""``bench.cgroups``: limits that hold, or a reason why not; never a pretended limit.

The tests that need a writable cgroup skip with the module's own reason where there is none.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import cgroups
from bench.cgroups import SandboxCgroup, _Mount, _unescape
from harness.sandbox.limits import PidsLimit

HOG = "import sys; data = b'x' * (int(sys.argv[1]) << 20); print('allocated', len(data) >> 20)"


def _require(cgroup: SandboxCgroup, controller: str) -> None:
    if not cgroup.limited(controller):
        cgroup.close()
        pytest.skip(cgroup.reasons.get(controller, f"no {controller} controller"))


def test_nothing_requested_wraps_nothing() -> None:
    cgroup = SandboxCgroup(memory_mb=None, max_pids=None)
    assert not cgroup.active and cgroup.reasons == {} and cgroup.notes == []
    assert cgroup.wrap_command(["/bin/true"]) == ["/bin/true"]
    assert cgroup.oom_kills() == 0 and cgroup.peak_refused() == 0
    cgroup.close()


def test_unavailable_controllers_are_reported_not_pretended(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cgroups, "_locate", lambda controller: f"no {controller} here")
    cgroup = SandboxCgroup(memory_mb=100, max_pids=10)
    assert not cgroup.active and cgroup.paths == {}
    assert cgroup.reasons == {"pids": "no pids here: process count not limited",
                              "memory": "no memory here: memory not limited"}
    assert cgroup.notes == list(cgroup.reasons.values())
    assert cgroup.wrap_command(["/bin/true"]) == ["/bin/true"]
    with pytest.raises(RuntimeError, match="no pids here"):
        _ = cgroup.procs_file


def test_mountinfo_fields_and_nesting_under_our_own_cgroup(tmp_path: Path) -> None:
    assert _unescape(r"/sys/fs/cgroup/with\040space") == "/sys/fs/cgroup/with space"
    mount = _Mount(1, tmp_path, "/", frozenset({"memory"}))
    assert cgroups._inside(mount, "/process_api/abc") == tmp_path / "process_api" / "abc"
    # a cgroup namespace whose mount shows /outer: our /outer/inner is at <mount>/inner
    assert cgroups._inside(_Mount(2, tmp_path, "/outer", frozenset()), "/outer/inner") == tmp_path / "inner"
    assert cgroups._inside(_Mount(2, tmp_path, "/outer", frozenset()), "/elsewhere") == tmp_path
    nested = tmp_path / "a" / "b"
    assert cgroups._candidates(nested, tmp_path) == [nested, tmp_path / "a", tmp_path]


def test_wrap_command_joins_every_cgroup_before_the_command() -> None:
    with SandboxCgroup(memory_mb=256, max_pids=64) as cgroup:
        if not cgroup.active:
            pytest.skip(cgroup.reason)
        shown = subprocess.run(cgroup.wrap_command(["/bin/cat", "/proc/self/cgroup"]), capture_output=True, text=True,
                               check=True).stdout
        for controller in cgroup.paths:
            line = next(line for line in shown.splitlines()
                        if controller in line.split(":")[1].split(",") or line.startswith("0::"))
            assert line.endswith("/" + cgroup.name), (controller, shown)
        directories = list(dict.fromkeys(cgroup.paths.values()))
    assert all(not path.exists() for path in directories)  # close removes them


def test_memory_limit_kills_only_the_hog() -> None:
    with SandboxCgroup(memory_mb=200, max_pids=None) as cgroup:
        _require(cgroup, "memory")
        fine = subprocess.run(cgroup.wrap_command([sys.executable, "-c", HOG, "50"]), capture_output=True, text=True,
                              check=False)
        assert fine.returncode == 0 and fine.stdout.strip() == "allocated 50"
        assert cgroup.oom_kills() == 0
        hog = subprocess.run(cgroup.wrap_command([sys.executable, "-c", HOG, "1024"]), capture_output=True, text=True,
                             check=False)
        assert hog.returncode == -9 or "MemoryError" in hog.stderr, hog
        if hog.returncode == -9:
            assert cgroup.oom_kills() == 1


def test_pids_limit_adapter_keeps_its_interface() -> None:
    """``harness.sandbox.limits.PidsLimit`` is the old name: only the pids controller."""
    limit = PidsLimit(5)
    try:
        if not limit.active:
            pytest.skip(limit.reason)
        assert set(limit.paths) == {"pids"} and limit.path == limit.paths["pids"]
        assert limit.procs_file == limit.path / "cgroup.procs"
        assert (limit.path / "pids.max").read_text().strip() == "5"
        # children exit at once but stay zombies (never reaped): they still count
        forks = "import os\nfor _ in range(10):\n    os.fork() or os._exit(0)"
        bomb = subprocess.run(limit.wrap_command([sys.executable, "-c", forks]), capture_output=True, text=True,
                              check=False)
        assert bomb.returncode != 0 and "BlockingIOError" in bomb.stderr, bomb
        assert limit.peak_refused() >= 1
    finally:
        limit.close()
    assert limit.path is None
