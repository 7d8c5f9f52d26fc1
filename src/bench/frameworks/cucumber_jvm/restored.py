"""Verdict JVMs restored from a checkpoint: a fresh process per verdict run without paying JVM
start, library loading and cucumber's warm-up each time.

A Cucumber-JVM verdict run is a fresh JVM in bubblewrap (the trust rule: nothing of one run may
reach another), and on java-algorand-sdk that JVM costs ~1.1–1.8 s of CPU, most of it before the
scenario's first step: the JDK, cucumber and ~20,000 classes of the dependency jars loading, and
cucumber's code still interpreted. So once per judge session (``make_zygote``) a JVM — the
*zygote*, ``java/Zygote.java`` — is started in the verdict sandbox's layout with the dependency
jars and the session's resource directories on its class path (the started JVM's order), loads
the jars' classes without initialising them (a static initialiser runs during a run, reading the
system properties and files the run set up, as in a started JVM), runs cucumber three times on a
feature of its own with no glue, and waits for a command file; criu dumps it there. Every
verdict run then restores that image in a fresh sandbox (``restore_command``): a new process tree
in new namespaces, its memory the image's, handed one command (the schemata number, the run's
class directories, cucumber's arguments), which it deletes before its run's class loader exists.

What makes it as trustworthy as a fresh JVM:

- **nothing of any run is in the image**: the zygote is dumped before a class of the project,
  the production or a prediction exists in it, and every run restores the same image (read-only
  in the sandbox), so no run can leave anything for another, and every variant starts from the
  same bytes;
- **the number** is a file in the run's own output directory, read and deleted by the zygote
  before its class loader over the run's directories is created (as the fresh JVM's launcher
  closes fd 3 before the class path loads); it then sits where it sits in a fresh JVM
  (``req2test.schema.Main``'s private field);
- **no ``/proc``**: criu needs it to restore, so the restore sandbox mounts it, and criu's
  action script unmounts it at ``pre-resume`` — after every task is restored, before any of
  them runs an instruction. The restored JVM cannot mount it again;
- **no capability**: criu runs as root with capabilities (bubblewrap without a user namespace;
  it must create processes at given pids and map their memory), but the JVM is restored with
  the credentials it was dumped with: uid 0 (the fresh sandbox's ``nobody`` is root outside its
  user namespace: the same files are readable and writable in both), an empty bounding set,
  ``no_new_privs`` and the ``noroot`` secure bits, so it holds no capability and an ``exec``
  gains none. It can signal criu (the same uid), which only ends its own run as a failure;
  it cannot trace it (criu holds capabilities it lacks);
- **no network**: a network namespace of its own, as the fresh sandbox.

What differs from a fresh JVM, and why it cannot help a test: the run's classes (the prediction's
glue, the schemata production) are in a class loader of their own under the application class
loader (as in the builder's warm runner, whose verdicts the builder's fresh-process check
compares with started JVMs); the dependency jars' classes are loaded (not initialised) before the
run; ``user.name`` is ``root``; all of it the same for every variant; the traced run (JaCoCo's agent must be there from the JVM's start) is still a
fresh JVM, which only a test that loses kills by it can tell apart (``kill_plan``).

When criu is missing (it needs 4.x on recent kernels: Debian 12's 3.17 fails on the vDSO of
6.x kernels; ``scripts/install-criu.sh`` builds 4.1.1), the machine refuses a checkpoint, the
judge runs without bubblewrap, or ``REQ2TEST_JVM_RESTORE=0``: every verdict run is a fresh JVM,
as before. A restore that fails (no ``RESTORED`` marker from the zygote) is run again as a
fresh JVM, so a failed restore is never a failed test.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.environments import cache_dir
from bench.frameworks.cucumber_jvm.javac_server import helper_classes
from bench.isolation import bwrap_path

ENABLE_ENV = "REQ2TEST_JVM_RESTORE"  # "0": every verdict run a fresh JVM
CRIU_ENV = "REQ2TEST_CRIU"  # a criu binary (else the cache's, else PATH's)
ZYGOTE_CLASS = "Zygote"
COMMAND_NAME = "command"  # in the run's output directory: the zygote's one command
RESTORED_NAME = "RESTORED"  # the zygote's marker: it took the command
TOOLS = Path("/run/req2test-criu")  # criu and its action script, inside the sandbox
IMAGE = Path("/run/req2test-zygote")  # the images, inside the sandbox
FIRST_PID = 5000  # the zygote's pid in its namespace: above anything the restore sandbox starts
WARM_RUNS = 3
UNSHARE = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup")
# the JVM's credentials (criu restores them): no capability now, none by exec, no setuid gain
DROP_PRIVILEGES = ("setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all",
                   "--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked",
                   "--no-new-privs")
HIDE_PROC = '#!/bin/sh\n# criu: the restored tasks exist and have not run yet: take /proc away from them\n' \
            '[ "$CRTOOLS_SCRIPT_ACTION" = "pre-resume" ] && exec umount -l /proc\nexit 0\n'
WARM_FEATURE = """Feature: req2test's zygote warms cucumber up (no glue: nothing of the project)
  Scenario: steps nothing defines
    Given a step with "a string" and 42
    When another one
      \"\"\"
      a doc string
      \"\"\"
    Then a table
      | a | b |
      | 1 | 2 |
"""


class ZygoteError(RuntimeError):
    """The checkpoint could not be made (the judge then runs fresh JVMs)."""


@dataclass(frozen=True)
class Zygote:
    """A dumped zygote and how to restore it."""

    image: Path  # criu's images (host)
    classes: Path  # the compiled Zygote (bound at its own path, as when it was dumped)
    tools: Path  # criu and the action script (host)
    layout: tuple[str, ...]  # the sandbox's shared part (``sandbox.layout``): what the image's files need
    seconds: float  # to start, warm and dump it
    size: int  # bytes of the images


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "1").strip() not in ("0", "no", "false", "off")


def criu_binary() -> Path | None:
    """A criu that works on this machine (4.x; ``criu check`` passes; we are root), or None."""
    if os.geteuid() != 0:
        return None
    configured = os.environ.get(CRIU_ENV)
    candidates = [Path(configured)] if configured else []
    candidates.append(cache_dir("criu", "REQ2TEST_CRIU_CACHE") / "criu")
    found = shutil.which("criu")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if candidate.is_file() and _works(str(candidate.resolve())):
            return candidate.resolve()
    return None


@functools.cache
def _works(criu: str) -> bool:
    try:
        version = subprocess.run([criu, "--version"], capture_output=True, text=True, timeout=30, check=False)
        match = re.search(r"Version:\s*(\d+)", version.stdout)
        if not match or int(match.group(1)) < 4:
            return False
        check = subprocess.run([criu, "check"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return check.returncode == 0 and "Looks good" in check.stdout + check.stderr


def make_zygote(java: str, jvm_flags: list[str], class_path: list[str], root: Path, layout: list[str],
                env: dict[str, str], out: Path, work: Path, timeout: float = 300.0) -> Zygote:
    """Start the zygote in the sandbox's ``layout`` (with ``/proc``, which criu needs), wait for it,
    dump it into ``work``. ``class_path``: the dependency jars and the resource directories, in the
    started JVM's order (no class of the project may be on it). ``out`` is bound at
    ``sandbox.OUT`` as every verdict run's output directory is (``jvm_flags`` name ``OUT``'s
    ``tmp`` as ``java.io.tmpdir``)."""
    from bench.frameworks.cucumber_jvm.sandbox import OUT

    criu, bwrap = criu_binary(), bwrap_path()
    if criu is None or bwrap is None:
        raise ZygoteError("criu 4.x (scripts/install-criu.sh) or bubblewrap is missing")
    started = time.monotonic()
    for entry in class_path:
        if not entry.endswith(".jar") and any(Path(entry).rglob("*.class")):
            raise ZygoteError(f"a directory of classes on the zygote's class path: {entry}")
    classes = helper_classes(ZYGOTE_CLASS)
    tools, image = work / "tools", work / "image"
    shutil.rmtree(work, ignore_errors=True)
    tools.mkdir(parents=True)
    image.mkdir()
    shutil.copy2(criu, tools / "criu")
    (tools / "hide-proc").write_text(HIDE_PROC, encoding="utf-8")
    (tools / "hide-proc").chmod(0o755)
    (tools / "warm.feature").write_text(WARM_FEATURE, encoding="utf-8")
    (out / "tmp").mkdir(parents=True, exist_ok=True)
    command = OUT / COMMAND_NAME
    jvm = [java, *jvm_flags, "-Xshare:off", "-XX:-UsePerfData", "-XX:+DisableAttachMechanism",
           "-cp", os.pathsep.join([*class_path, str(classes)]), ZYGOTE_CLASS, str(command),
           str(TOOLS / "warm.feature"), "/tmp/req2test-zygote-warm.json", str(WARM_RUNS)]
    quoted = " ".join(_quote(a) for a in jvm)
    script = (f"echo {FIRST_PID - 1} > /proc/sys/kernel/ns_last_pid || exit 90\n"
              f"{' '.join(DROP_PRIVILEGES)} setsid {quoted} </dev/null >/dev/null 2>&1 &\n"
              "pid=$!\n"
              f"while [ ! -e {command}.READY ]; do\n"
              f"  kill -0 $pid 2>/dev/null || exit 91\n  sleep 0.05\ndone\n"
              f"rm -f {command}.READY\n"
              f"exec {TOOLS}/criu dump -t $pid -D {IMAGE} --shell-job --manage-cgroups=ignore -o dump.log\n")
    argv = [bwrap, "--die-with-parent", *UNSHARE, "--new-session", *layout, "--proc", "/proc",
            "--ro-bind", str(tools), str(TOOLS), "--ro-bind", str(classes), str(classes),
            "--bind", str(image), str(IMAGE), "--bind", str(out.resolve()), str(OUT),
            "--chdir", str(root.resolve()), "--", "/bin/bash", "-c", script]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise ZygoteError(f"the zygote did not start and dump within {timeout:.0f} s") from exc
    if proc.returncode != 0:
        log = (image / "dump.log").read_text(errors="replace")[-600:] if (image / "dump.log").is_file() else ""
        reason = {90: "cannot set the pid namespace's next pid", 91: "the zygote JVM ended before it was ready"}
        raise ZygoteError(f"criu dump failed ({reason.get(proc.returncode, proc.returncode)}): "
                          f"{(proc.stdout + proc.stderr)[-400:]} {log}".strip())
    size = sum(p.stat().st_size for p in image.iterdir() if p.is_file())
    return Zygote(image=image, classes=classes, tools=tools, layout=tuple(layout), seconds=time.monotonic() - started, size=size)


def command_file(out: Path, number: int, switch: str, directories: list[str], output: str,
                 arguments: list[str]) -> Path:
    """Write the zygote's one command into the run's output directory (the zygote deletes it)."""
    for text in (*directories, *arguments, output, switch):
        if "\n" in text:
            raise ValueError(f"a line break in the zygote's command: {text!r}")
    lines = [f"NUMBER {number}", f"SWITCH {switch}", *(f"DIR {d}" for d in directories), f"OUTPUT {output}",
             *(f"ARG {a}" for a in arguments)]
    path = out / COMMAND_NAME
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def restore_command(zygote: Zygote, extra_binds: list[str], cwd: Path, out: Path) -> list[str]:
    """The command that restores the zygote in a fresh sandbox, ``out`` bound at ``OUT`` (its
    ``command`` written by ``command_file``), and waits for the restored JVM: criu's status is the
    JVM's (``criu restore`` without ``-d`` stays its parent)."""
    from bench.frameworks.cucumber_jvm.sandbox import OUT

    bwrap = bwrap_path()
    assert bwrap is not None
    return [bwrap, "--die-with-parent", *UNSHARE, "--new-session", *zygote.layout, *extra_binds,
            "--proc", "/proc", "--ro-bind", str(zygote.tools), str(TOOLS),
            "--ro-bind", str(zygote.classes), str(zygote.classes), "--ro-bind", str(zygote.image), str(IMAGE), "--bind", str(out.resolve()), str(OUT),
            "--chdir", str(cwd.resolve()), "--",
            str(TOOLS / "criu"), "restore", "-D", str(IMAGE), "-W", str(OUT), "-o", "criu-restore.log",
            "--shell-job", "--manage-cgroups=ignore", "--action-script", str(TOOLS / "hide-proc")]


def restored(out: Path) -> bool:
    """Whether the zygote took the run's command (else the run is to be made by a fresh JVM)."""
    return (out / RESTORED_NAME).is_file()


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


__all__ = ["COMMAND_NAME", "ENABLE_ENV", "RESTORED_NAME", "Zygote", "ZygoteError", "command_file", "criu_binary",
           "enabled", "make_zygote", "restore_command", "restored"]
