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

import functools
import json
import os
import re
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.frameworks.cucumber_js.messages import RunReport, parse_report, read_report, report_problems
from bench.isolation import wrap

CLI = "node_modules/@cucumber/cucumber/bin/cucumber.js"
PROJECT_MOUNT = "/project"  # where a run's tree is inside the sandbox
TSX_CACHE_INSIDE = "/tmp/tsx-65534"  # os.tmpdir()/tsx-<euid> for the sandbox's uid (nobody)
SKIPPED_NAMES = {"node_modules", ".git", ".stryker-tmp", "reports"}


REPORT_LIMIT = 64 << 20  # bytes of messages read from a guarded run's report pipe
# cucumber-js makes the directory of a formatter's target first and warns when it may not:
# /dev/fd (the report pipe's) may not be written under the permission model, by design
_PIPE_DIRECTORY_WARNING = re.compile(
    r"Failed to ensure directory for formatter target exists Error: Access to this API has been restricted\n"
    r"(?:\s+at .*\n)*\s*code: 'ERR_ACCESS_DENIED',\n\s*permission: 'FileSystemWrite',\n\s*resource: '/dev/fd'\n\}\n?")


@dataclass(frozen=True)
class CucumberRun:
    report: RunReport
    exit_code: int | None
    elapsed: float
    timed_out: bool
    stderr: str
    # why the message stream is not the one cucumber-js's formatter wrote (guarded runs: it
    # comes through a pipe the judge reads while the run goes, so it can only be appended to)
    problems: tuple[str, ...] = ()
    guarded: bool = False
    stdout: str = ""  # the tail of what the run printed (progress formatter and the test's console.log)

    @property
    def passed(self) -> bool:
        return not self.timed_out and self.exit_code == 0 and not self.problems and bool(self.report.pickles) \
            and all(s.status == "PASSED" for p in self.report.pickles for s in p.steps) and not any(
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
                 writable_cache: bool = False, guard: bool = False) -> CucumberRun:
    """One cucumber-js process on ``work`` for ``selection`` (``feature:line`` strings).

    Under bubblewrap the tree is mounted at ``/project`` whatever its host path, so that
    ``compile_cache`` (tsx's transform cache, keyed by absolute path and content) made by one
    trusted run serves every later run; it is mounted read-only (tsx ignores failed writes,
    so a test can never plant a compiled file), or writable for the run that fills it.

    ``guard``: a verdict run of untrusted code. Node's permission model (``guard_args``)
    refuses child processes, worker threads, native addons, WASI and the inspector, every read
    outside the tree, ``node_modules`` and the run's scratch directory and every write outside
    that scratch directory; and the message formatter writes into a pipe this process reads
    while the run goes (``/dev/fd/N``), so what the formatter wrote cannot be rewritten
    afterwards, only appended to — which ``report_problems`` sees. (Node 20 writes no
    ``NODE_V8_COVERAGE`` under the permission model: a traced run is never guarded.)"""
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "messages.ndjson"
    report.unlink(missing_ok=True)
    run_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
               "NODE_OPTIONS": "", "FORCE_COLOR": "0", **(env or {})}
    read_fd = write_fd = -1
    node = ["node"]
    target = str(report)
    if guard:
        read_fd, write_fd = os.pipe()
        target = f"/dev/fd/{write_fd}"
        if isolation == "bwrap":
            inside, scratch = PROJECT_MOUNT, "/tmp"  # /tmp: the sandbox's own tmpfs, gone with it
        else:
            inside, scratch_dir = str(work), out_dir / "scratch"
            scratch_dir.mkdir(exist_ok=True)
            scratch = str(scratch_dir)
            run_env.update({"HOME": scratch, "TMPDIR": scratch})
            if compile_cache is not None and compile_cache.is_dir():  # a copy: the run may write its scratch
                shutil.copytree(compile_cache, scratch_dir / compile_cache.name, dirs_exist_ok=True)
        node += guard_args(inside, (work / "node_modules").resolve(), scratch, target)
    command = [*node, CLI, *(["--fail-fast"] if fail_fast else []), "--format", f"message:{target}",
               *(extra_args or []), *selection]
    if isolation == "bwrap":
        command = sandbox_command(command, work, out_dir, compile_cache=compile_cache, writable_cache=writable_cache)
    elif not guard:
        run_env = {**os.environ, **run_env, "HOME": os.environ.get("HOME", "/tmp"),
                   "TMPDIR": str(compile_cache.parent) if compile_cache is not None
                   else os.environ.get("TMPDIR", "/tmp")}
    else:
        run_env = {**os.environ, **run_env}
    start = time.perf_counter()
    if not guard:
        try:
            proc = subprocess.run(command, cwd=work, env=run_env, capture_output=True, timeout=timeout, check=False)
            code, stderr, timed_out = proc.returncode, proc.stderr.decode(errors="replace"), False
            stdout = proc.stdout
        except subprocess.TimeoutExpired as exc:
            code, stderr, timed_out = None, (exc.stderr or b"").decode(errors="replace"), True
            stdout = exc.stdout or b""
        return CucumberRun(report=read_report(report), exit_code=code, elapsed=time.perf_counter() - start,
                           timed_out=timed_out, stderr=stderr[-4000:], stdout=_tail(stdout))
    reader = _PipeReader(read_fd)
    try:
        child = subprocess.Popen(command, cwd=work, env=run_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, pass_fds=(write_fd,))
    finally:
        os.close(write_fd)
    reader.start()
    try:
        printed, err = child.communicate(timeout=timeout)
        code, timed_out = child.returncode, False
    except subprocess.TimeoutExpired:
        child.kill()
        printed, err = child.communicate()
        code, timed_out = None, True
    elapsed = time.perf_counter() - start
    data = reader.finish()
    lines = data.decode("utf-8", errors="replace").splitlines()
    problems = report_problems(lines, torn_tail=timed_out)
    if reader.overflow:
        problems.insert(0, f"more than {REPORT_LIMIT >> 20} MiB of messages")
    return CucumberRun(report=parse_report(lines), exit_code=code, elapsed=elapsed, timed_out=timed_out,
                       stderr=_PIPE_DIRECTORY_WARNING.sub("", err.decode(errors="replace"), count=1)[-4000:],
                       problems=tuple(problems), guarded=True, stdout=_tail(printed))


STDOUT_TAIL = 64 * 1024  # bytes of a run's stdout kept (a failure detail keeps 16 KiB of it)


def _tail(data: bytes | None) -> str:
    return (data or b"")[-STDOUT_TAIL:].decode(errors="replace")


PRECOMPILE_SCRIPT = Path(__file__).with_name("node") / "precompile.cjs"


def precompile(work: Path, files: Iterable[tuple[str, str]], require: list[str], out_dir: Path, *,
               isolation: str, compile_cache: Path | None, timeout: float = 600.0) -> int:
    """Fill ``compile_cache`` with what the transpiler the profile registers (``require``:
    bare package specifiers of its ``requireModule``, e.g. ``tsx/cjs``) makes of ``files``
    ((path relative to ``work``, content) pairs, one path possibly with several contents: as
    later runs on a tree at the same path load them), without running any of it (``node/precompile.cjs``). Trusted and unguarded:
    esbuild needs a worker thread and a child process, which a guarded run may not start.
    Returns how many files went through the transpiler's handler (-1: the process failed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    inside = PROJECT_MOUNT if isolation == "bwrap" else str(work)
    spec = out_dir / "precompile.json"
    spec.write_text(json.dumps({"require": require, "files": [{"path": f"{inside}/{rel}", "content": text}
                                                              for rel, text in files]}))
    command = ["node", str(PRECOMPILE_SCRIPT), str(spec)]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "NODE_OPTIONS": ""}
    # tsx writes a cache entry in place (truncate, then write), and runs of other judgements
    # read the shared cache meanwhile: the precompile writes a private copy (the shared
    # entries hard-linked in), whose new entries are then renamed into the shared one whole
    private = None
    if compile_cache is not None:
        compile_cache.mkdir(parents=True, exist_ok=True)
        private = out_dir / "cache" / compile_cache.name
        shutil.rmtree(private.parent, ignore_errors=True)
        private.mkdir(parents=True)
        for entry in compile_cache.iterdir():
            _link_or_copy(entry, private / entry.name)
    if isolation == "bwrap":
        command = sandbox_command(command, work, out_dir, compile_cache=private, writable_cache=True)
    else:
        env = {**os.environ, **env, "TMPDIR": str(private.parent) if private is not None
               else os.environ.get("TMPDIR", "/tmp")}
    try:
        proc = subprocess.run(command, cwd=work, env=env, capture_output=True, timeout=timeout, check=False)
        compiled = int(json.loads(proc.stdout.decode().strip().splitlines()[-1])["compiled"]) \
            if proc.returncode == 0 else -1
    except (subprocess.TimeoutExpired, ValueError, IndexError, KeyError):
        compiled = -1
    if private is not None and compile_cache is not None:
        for entry in private.iterdir():
            target = compile_cache / entry.name
            if not target.exists():
                staged = compile_cache / f".{entry.name}.{os.getpid()}.{threading.get_ident()}"
                shutil.copyfile(entry, staged)
                os.chmod(staged, 0o644)
                os.replace(staged, target)
    return compiled


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def transpiler_modules(root: Path) -> list[str]:
    """The profile's ``requireModule`` entries a trusted process may load: bare package
    specifiers (``tsx/cjs``), never a file of the tree (a prediction could replace it)."""
    return [str(entry) for entry in profile(root).get("requireModule", []) or []
            if isinstance(entry, str) and entry and not entry.startswith((".", "/"))]


def guard_args(tree: str, modules: Path, scratch: str, report: str) -> list[str]:
    """Node's permission model for a verdict run (Node 20: ``--experimental-permission``; one
    flag per path, a comma-separated list is read as one path): reads of the tree, the
    packages and the scratch directory (which holds tsx's compile cache, read-only under
    bubblewrap, and the ``$HOME`` cucumber-js's install check looks into: Node 20's
    ``existsSync`` throws on a path it may not read), writes to the scratch directory and the
    report pipe. Nothing else: no ``--allow-child-process``, ``--allow-worker``,
    ``--allow-addons`` or ``--allow-wasi`` (a project whose profile registers ESM loader hooks,
    which run on a worker thread, would need ``--allow-worker``; workers inherit the model)."""
    args = ["--experimental-permission", "--disable-warning=ExperimentalWarning"]
    for path in (tree, str(modules), scratch, *node_binary_probes()):
        args.append(f"--allow-fs-read={path}")
    for path in (scratch, report):
        args.append(f"--allow-fs-write={path}")
    return args


@functools.cache  # the same for every run of this process: not looked up on each run's start
def node_binary_probes() -> tuple[str, ...]:
    """The node binary's path and its case-swapped twin: tsx's get-tsconfig tells whether the file
    system is case-sensitive by ``existsSync(process.execPath)`` and the same path case-swapped,
    which Node 20's permission model answers with a throw unless both may be read (js-algorand-sdk
    did not load guarded: every verdict run went unguarded). The binary is public, the twin absent."""
    found = shutil.which("node")
    paths = {found, os.path.realpath(found)} if found else set()
    return tuple(sorted(paths | {path.swapcase() for path in paths}))


class _PipeReader(threading.Thread):
    """Reads a run's report pipe while the run goes (at most ``REPORT_LIMIT`` bytes kept)."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False
        self._closing = threading.Event()

    def run(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                if self._closing.is_set():
                    return
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return
            if self.size + len(chunk) > REPORT_LIMIT:
                self.overflow = True
                continue
            self.chunks.append(chunk)
            self.size += len(chunk)

    def finish(self) -> bytes:
        """What the pipe held once every writer closed it (or, should one linger, 5 s after
        the run's process ended)."""
        self.join(5.0)
        self._closing.set()
        self.join()
        os.close(self.fd)
        return b"".join(self.chunks)


def sandbox_command(command: list[str], work: Path, out_dir: Path, *, compile_cache: Path | None = None,
                    writable_cache: bool = False) -> list[str]:
    """``command`` under the bubblewrap arguments of a run on ``work`` (tests run a walker of
    the sandbox's disk with exactly these: tests/integration/readable_files.py)."""
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
    return command


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
