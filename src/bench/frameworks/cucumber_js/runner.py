"""Run cucumber-js the way the developers do: a new ``node`` process, the project's default
profile (``cucumber.json``), a selection of ``feature:line``s, the result read from Cucumber
Messages.

Every run gets its own tree (``link_tree``): hard links of the project (so Node's realpath
of a step file stays inside that tree and ``require('../../src')`` loads *this* tree's
production, mutant included), the replaced files written, ``node_modules`` a symlink to the
provisioned packages. Under bubblewrap the tree is read-only, there is no network but a
loopback of its own (the suite's mock servers bind fixed ports, so concurrent runs never
collide), and the uid is nobody.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.frameworks.cucumber_js.messages import RunReport, read_report
from bench.isolation import wrap

CLI = "node_modules/@cucumber/cucumber/bin/cucumber.js"
PROJECT_MOUNT = "/project"  # where a run's tree is inside the sandbox
TSX_CACHE_INSIDE = "/tmp/tsx-65534"  # os.tmpdir()/tsx-<euid> for the sandbox's uid (nobody)
SKIPPED_NAMES = {"node_modules", ".git", ".stryker-tmp", "reports"}


@dataclass(frozen=True)
class CucumberRun:
    report: RunReport
    exit_code: int | None
    elapsed: float
    timed_out: bool
    stderr: str

    @property
    def passed(self) -> bool:
        return not self.timed_out and self.exit_code == 0 and bool(self.report.pickles) and all(
            s.status == "PASSED" for p in self.report.pickles for s in p.steps) and not any(
            p.hook_failures for p in self.report.pickles)


def link_tree(source: Path, target: Path, replaced: dict[str, bytes] | None = None,
              node_modules: Path | None = None) -> None:
    """``target`` holds ``source`` as hard links (copies across devices), ``replaced`` written
    as new files, and ``node_modules`` as a symlink."""
    replaced = replaced or {}
    for dirpath, dirnames, filenames in os.walk(source):
        rel_dir = Path(dirpath).relative_to(source)
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_NAMES]
        (target / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            rel = (rel_dir / name).as_posix()
            if rel in replaced:
                continue
            src, dst = Path(dirpath) / name, target / rel_dir / name
            if src.is_symlink():
                continue
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
    for rel, content in replaced.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    if node_modules is not None:
        (target / "node_modules").symlink_to(node_modules.resolve(), target_is_directory=True)


def run_cucumber(work: Path, selection: list[str], out_dir: Path, *, timeout: float = 120.0,
                 isolation: str = "none", fail_fast: bool = False, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None, compile_cache: Path | None = None,
                 writable_cache: bool = False) -> CucumberRun:
    """One cucumber-js process on ``work`` for ``selection`` (``feature:line`` strings).

    Under bubblewrap the tree is mounted at ``/project`` whatever its host path, so that
    ``compile_cache`` (tsx's transform cache, keyed by absolute path and content) made by one
    trusted run serves every later run; it is mounted read-only (tsx ignores failed writes,
    so a test can never plant a compiled file), or writable for the run that fills it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "messages.ndjson"
    report.unlink(missing_ok=True)
    command = ["node", CLI, *(["--fail-fast"] if fail_fast else []), "--format", f"message:{report}",
               *(extra_args or []), *selection]
    run_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
               "NODE_OPTIONS": "", "FORCE_COLOR": "0", **(env or {})}
    if isolation == "bwrap":
        _open_for_nobody(out_dir, work)
        modules = (work / "node_modules").resolve()
        mounted = [(work, PROJECT_MOUNT)]
        cache_bind: list[str] = []
        if compile_cache is not None:
            compile_cache.mkdir(parents=True, exist_ok=True)
            os.chmod(compile_cache, 0o777 if writable_cache else 0o755)
            if writable_cache:
                cache_bind = ["--bind", str(compile_cache), TSX_CACHE_INSIDE]
            else:
                mounted.append((compile_cache, TSX_CACHE_INSIDE))
        command = wrap(command, writable=[out_dir], readonly=[modules], cwd=PROJECT_MOUNT, mounted=mounted)
        if cache_bind:  # after the tmpfs on /tmp, before the command
            split = command.index("--chdir")
            command = [*command[:split], *cache_bind, *command[split:]]
    else:
        run_env = {**os.environ, **run_env, "HOME": os.environ.get("HOME", "/tmp"),
                   "TMPDIR": os.environ.get("TMPDIR", "/tmp")}
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=work, env=run_env, capture_output=True, timeout=timeout, check=False)
        code, stderr, timed_out = proc.returncode, proc.stderr.decode(errors="replace"), False
    except subprocess.TimeoutExpired as exc:
        code, stderr, timed_out = None, (exc.stderr or b"").decode(errors="replace"), True
    return CucumberRun(report=read_report(report), exit_code=code, elapsed=time.perf_counter() - start,
                       timed_out=timed_out, stderr=stderr[-4000:])


def _open_for_nobody(out_dir: Path, work: Path) -> None:
    """The sandbox's uid is nobody: it must read the tree and write its report (temporary
    directories are created 0700; bubblewrap makes the parents of a bind itself)."""
    os.chmod(out_dir, 0o777)
    os.chmod(work, work.stat().st_mode | 0o005)


def profile(root: Path) -> dict:
    """The default profile of the project's ``cucumber.json`` ({} without one)."""
    path = root / "cucumber.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return {}
    default = data.get("default", {}) if isinstance(data, dict) else {}
    return default if isinstance(default, dict) else {}


def step_files(root: Path) -> list[str]:
    """The test side: every JS/TS file in the directories of the profile's ``require`` and
    ``import`` entries (the entry files load their siblings themselves)."""
    from bench.frameworks.cucumber_js.testside import SOURCE_SUFFIXES

    settings = profile(root)
    found: set[str] = set()
    for entry in [*settings.get("require", []), *settings.get("import", [])]:
        for match in root.glob(str(entry)):
            base = match if match.is_dir() else match.parent
            for path in base.rglob("*"):
                if path.is_file() and path.suffix in SOURCE_SUFFIXES and "node_modules" not in path.parts:
                    found.add(path.relative_to(root).as_posix())
    return sorted(found)


def compile_cache_for(directory: Path, isolation: str) -> Path | None:
    """Where tsx's transform cache lives: runs share it only under bubblewrap, where every
    tree is mounted at the same path (None otherwise)."""
    return directory if isolation == "bwrap" else None
