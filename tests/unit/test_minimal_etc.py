"""``bench.minimal_etc``: what a sandbox's /etc is made of (the bwrap integration tests check it
from inside)."""

from __future__ import annotations

import os
from pathlib import Path

from bench import isolation, minimal_etc
from bench.minimal_etc import GENERATED, HOST_ENTRIES, build_minimal_etc, bwrap_etc_args, docker_etc_binds


def test_generated_files_hold_only_root_and_nobody(tmp_path: Path) -> None:
    built = build_minimal_etc(tmp_path)
    assert built.parent == tmp_path and sorted(p.name for p in built.iterdir()) == sorted(GENERATED)
    users = [line.split(":") for line in (built / "passwd").read_text().splitlines()]
    assert [(u[0], u[2]) for u in users] == [("root", "0"), ("nobody", "65534")]
    groups = [line.split(":") for line in (built / "group").read_text().splitlines()]
    assert [(g[0], g[2]) for g in groups] == [("root", "0"), ("nogroup", "65534")]
    assert all(oct((built / name).stat().st_mode & 0o777) == "0o644" for name in GENERATED)
    # rebuilt when damaged, untouched otherwise
    (built / "passwd").write_text("intruder:x:0:0::/:/bin/sh\n")
    mtime = (built / "group").stat().st_mtime_ns
    assert build_minimal_etc(tmp_path) == built
    assert (built / "passwd").read_text() == GENERATED["passwd"]
    assert (built / "group").stat().st_mtime_ns == mtime


def test_bwrap_args_build_a_read_only_etc_without_host_secrets(tmp_path: Path) -> None:
    args = bwrap_etc_args(tmp_path)
    assert args[:2] == ["--tmpfs", "/etc"] and args[-2:] == ["--remount-ro", "/etc"]
    triples = [args[i:i + 3] for i, arg in enumerate(args) if arg in ("--ro-bind", "--symlink")]
    inside = {t[2] for t in triples}
    assert {f"/etc/{name}" for name in GENERATED} <= inside
    assert inside <= {f"/etc/{name}" for name in [*GENERATED, *HOST_ENTRIES]}
    sources = {t[1] for t in triples if t[0] == "--ro-bind"}
    for secret in ("/etc", "/etc/shadow", "/etc/ssl", "/etc/ssl/private", "/etc/hostname", "/etc/machine-id",
                   "/etc/passwd", "/etc/group"):
        assert secret not in sources
    # a nested entry gets its parent made first (0755, not bwrap's 0700)
    if "/etc/ssl/certs" in inside:
        assert args.index("/etc/ssl") < args.index("/etc/ssl/certs")
    if Path("/etc/ld.so.cache").exists():
        assert ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"] in triples


def test_docker_binds_are_the_same_entries(tmp_path: Path) -> None:
    binds = docker_etc_binds(tmp_path)
    assert all(spec["mode"] == "ro" for spec in binds.values())
    inside = {spec["bind"] for spec in binds.values()}
    args = bwrap_etc_args(tmp_path)
    assert inside == {args[i + 2] for i, arg in enumerate(args) if arg in ("--ro-bind", "--symlink")}
    assert "/etc/shadow" not in binds and "/etc" not in binds


def test_a_shared_directory_someone_else_could_write_is_not_trusted(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    assert minimal_etc._private_dir(mine)
    open_to_all = tmp_path / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    assert not minimal_etc._private_dir(open_to_all)
    planted = tmp_path / "planted"
    planted.symlink_to(mine)
    assert not minimal_etc._private_dir(planted)
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 12345, 12345)
        assert not minimal_etc._private_dir(theirs)


def test_evaluator_recipe_no_longer_binds_the_host_etc(tmp_path: Path) -> None:
    assert "/etc" not in isolation.SYSTEM_DIRS
    if isolation.bwrap_path() is None:
        return
    command = isolation.wrap(["/bin/true"], writable=[tmp_path], readonly=[], cwd=tmp_path)
    binds = [command[i + 1] for i, arg in enumerate(command) if arg in ("--ro-bind", "--ro-bind-try", "--bind")]
    assert "/etc" not in binds and "--remount-ro" in command
