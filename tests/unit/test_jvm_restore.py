"""The pieces of a restored verdict JVM (``cucumber_jvm.restored``) that need no criu: the
command the zygote takes, the restore sandbox's shape, when the judge falls back to fresh JVMs.
The restores themselves are proven in ``tests/integration/test_cucumber_jvm_judge.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm import restored
from bench.frameworks.cucumber_jvm.restored import IMAGE, TOOLS, Zygote, ZygoteError


def test_the_command_names_the_number_the_directories_and_cucumbers_arguments(tmp_path: Path) -> None:
    path = restored.command_file(tmp_path, 17, "req2test.schema.Main selected", ["/a/classes", "/b/res"],
                                 "/run/out/output.txt", ["--glue", "x.y", "f.feature:4"])
    assert path == tmp_path / restored.COMMAND_NAME
    assert path.read_text().splitlines() == [
        "NUMBER 17", "SWITCH req2test.schema.Main selected", "DIR /a/classes", "DIR /b/res",
        "OUTPUT /run/out/output.txt", "ARG --glue", "ARG x.y", "ARG f.feature:4"]


def test_a_line_break_cannot_smuggle_a_second_command(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="line break"):
        restored.command_file(tmp_path, 1, "S f", ["/a"], "/o", ["f.feature:4\nNUMBER 9"])
    assert not (tmp_path / restored.COMMAND_NAME).exists()


def test_the_restore_sandbox_mounts_proc_only_for_criu_and_the_image_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(restored, "bwrap_path", lambda: "/usr/bin/bwrap")
    zygote = Zygote(image=tmp_path / "image", classes=tmp_path / "classes", tools=tmp_path / "tools",
                    layout=("--ro-bind", "/usr", "/usr"), seconds=1.0, size=1)
    argv = restored.restore_command(zygote, ["--ro-bind", "/p", "/p"], tmp_path, tmp_path / "out")
    assert "--unshare-user" not in argv and "--unshare-net" in argv and "--unshare-pid" in argv
    assert argv[argv.index("--proc") + 1] == "/proc"
    image_bind = argv.index(str(IMAGE)) - 2
    assert argv[image_bind] == "--ro-bind" and argv[image_bind + 1] == str(zygote.image)
    criu = argv[argv.index("--") + 1:]
    assert criu[:2] == [str(TOOLS / "criu"), "restore"]
    assert criu[criu.index("--action-script") + 1] == str(TOOLS / "hide-proc")
    assert "-d" not in criu  # criu stays the JVM's parent: its status is the JVM's


def test_the_action_script_unmounts_proc_before_the_tasks_resume() -> None:
    assert '"$CRTOOLS_SCRIPT_ACTION" = "pre-resume"' in restored.HIDE_PROC
    assert "umount -l /proc" in restored.HIDE_PROC


def test_the_jvm_is_dumped_without_any_privilege() -> None:
    dropped = " ".join(restored.DROP_PRIVILEGES)
    for needed in ("--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "noroot_locked"):
        assert needed in dropped


@pytest.mark.parametrize(("value", "expected"), [(None, True), ("1", True), ("0", False), ("off", False)])
def test_the_switch_turns_restores_off(monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool) -> None:
    if value is None:
        monkeypatch.delenv(restored.ENABLE_ENV, raising=False)
    else:
        monkeypatch.setenv(restored.ENABLE_ENV, value)
    assert restored.enabled() is expected


def test_without_criu_the_zygote_is_refused_with_the_remedy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(restored, "criu_binary", lambda: None)
    with pytest.raises(ZygoteError, match="install-criu.sh"):
        restored.make_zygote("java", [], ["/a.jar"], tmp_path, [], {}, tmp_path / "out", tmp_path / "work")


def test_a_criu_older_than_4_is_not_used(tmp_path: Path) -> None:
    old = tmp_path / "criu"
    old.write_text("#!/bin/sh\necho 'Version: 3.17.1'\n")
    old.chmod(0o755)
    restored._works.cache_clear()
    assert restored._works(str(old)) is False
