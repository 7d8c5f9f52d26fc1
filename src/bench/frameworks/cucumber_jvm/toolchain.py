"""The JDK and Maven as req2test drives them for a Cucumber-JVM project: one req2test-owned
local repository (provisioned once, like ``node_modules``), the project's tests compiled once
with ``mvn test-compile``, and the test classpath written out by the dependency plugin, so
that every scenario run afterwards is a plain ``java -cp`` with no Maven in it.

Why these settings:

- ``-Dmaven.repo.local=~/.cache/req2test/maven/repository`` (``$REQ2TEST_MAVEN_CACHE``
  overrides the ``maven`` directory): the user's ``~/.m2`` stays untouched and every project
  and run shares one download; Maven's local repository tolerates concurrent readers, and
  req2test runs one Maven at a time per project anyway.
- ``-B`` (batch: no colours, no progress bars), ``-q`` (errors only: the compile errors land
  in the output tail), ``-Dmaven.test.skip.exec=true`` is not needed since ``test-compile``
  stops before surefire.
- ``offline=True`` adds ``-o`` once everything is in the repository (a second build of the same
  project, a mutant build): no network at all, and Maven fails fast if something is missing.
- the dependency plugin is named with its version (``maven-dependency-plugin:3.6.1``): a bare
  ``dependency:`` prefix needs the plugin's metadata, which an offline repository may lack.
- JaCoCo (``org.jacoco.agent:runtime``, ``org.jacoco.cli:nodeps``, 0.8.12: the first release
  that reads Java 22 class files, and fine for the Java 8 bytecode the SDK compiles to) is
  brought into the same repository by the dependency plugin's ``copy`` goal.

Mockito 3.5.7's ByteBuddy (1.10.13) officially supports class files up to Java 15;
``-Dnet.bytebuddy.experimental=true`` lets it run on JDK 17 (``JVM_FLAGS`` in ``runner.py``).
java-algorand-sdk mocks only ``OkHttpClient``/``Call``/``Response`` classes compiled for
Java 8, so the flag is a precaution there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.environments import cache_dir

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
JACOCO_VERSION = "0.8.12"
JACOCO_AGENT = f"org.jacoco:org.jacoco.agent:{JACOCO_VERSION}:jar:runtime"
JACOCO_CLI = f"org.jacoco:org.jacoco.cli:{JACOCO_VERSION}:jar:nodeps"


def cache_root() -> Path:
    """``$REQ2TEST_MAVEN_CACHE``, else ``$XDG_CACHE_HOME/req2test/maven`` (~/.cache)."""
    return cache_dir("maven", "REQ2TEST_MAVEN_CACHE")


@dataclass(frozen=True)
class JavaToolchain:
    java: str
    mvn: str
    cache: Path

    @property
    def repository(self) -> Path:
        return self.cache / "repository"

    @classmethod
    def find(cls, cache: Path | None = None) -> JavaToolchain:
        java, mvn = shutil.which("java"), shutil.which("mvn")
        if java is None or mvn is None:
            missing = " and ".join(n for n, p in (("java", java), ("mvn", mvn)) if p is None)
            raise RuntimeError(f"no {missing} on PATH: install a JDK (17 or newer) and Maven 3.8")
        return cls(java=java, mvn=mvn, cache=cache or cache_root())

    def env(self) -> dict[str, str]:
        """Maven's environment: the caller's, less MAVEN_OPTS/JAVA_TOOL_OPTIONS-style injections
        that would change how the build or the JVM behaves."""
        base = {k: v for k, v in os.environ.items()
                if k not in ("MAVEN_OPTS", "MAVEN_ARGS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")}
        base.setdefault("LANG", "C.UTF-8")
        return base

    def maven_args(self, offline: bool = False) -> list[str]:
        args = [self.mvn, "-B", "-q", f"-Dmaven.repo.local={self.repository}"]
        return args + ["-o"] if offline else args

    def version(self) -> str:
        """``17.0.15`` (from ``java -version``'s first line)."""
        proc = subprocess.run([self.java, "-version"], capture_output=True, text=True, check=False)
        first = (proc.stderr or proc.stdout).splitlines()[:1]
        words = first[0].split('"') if first else []
        return words[1] if len(words) > 1 else "unknown"


@dataclass(frozen=True)
class MavenResult:
    ok: bool
    seconds: float
    output: str  # the tail of stdout+stderr (compile errors land here)


def _mvn(toolchain: JavaToolchain, args: list[str], cwd: Path, timeout: float, offline: bool) -> MavenResult:
    start = time.perf_counter()
    try:
        proc = subprocess.run([*toolchain.maven_args(offline), *args], cwd=cwd, env=toolchain.env(),
                              capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return MavenResult(False, time.perf_counter() - start, f"mvn {args[0]} timed out after {timeout:.0f} s")
    text = (proc.stdout + proc.stderr).decode(errors="replace")
    return MavenResult(proc.returncode == 0, time.perf_counter() - start, text[-6000:])


def compile_tests(root: Path, toolchain: JavaToolchain, *, offline: bool = False,
                 timeout: float = 1800.0) -> MavenResult:
    """``mvn test-compile``: production into ``target/classes``, tests into
    ``target/test-classes``, test resources (the features and mock responses) copied there."""
    return _mvn(toolchain, ["test-compile"], root, timeout, offline)


def build_classpath(root: Path, output: Path, toolchain: JavaToolchain, *, offline: bool = False,
                    timeout: float = 900.0) -> tuple[MavenResult, list[str]]:
    """The test-scope dependency jars (``dependency:build-classpath``), in Maven's order. The
    project's own ``target/test-classes`` and ``target/classes`` are not among them: see
    ``runtime_classpath``."""
    output.parent.mkdir(parents=True, exist_ok=True)
    result = _mvn(toolchain, [f"{DEPENDENCY_PLUGIN}:build-classpath", "-Dmdep.includeScope=test",
                              f"-Dmdep.outputFile={output.resolve()}"], root, timeout, offline)
    if not result.ok or not output.is_file():
        return result, []
    return result, [p for p in output.read_text(encoding="utf-8").strip().split(os.pathsep) if p]


def runtime_classpath(root: Path, dependencies: list[str]) -> list[str]:
    """What a scenario JVM runs on: the dependency jars first, then the project's class
    directories (test classes before production, as surefire orders them).

    Jars first is for AppCDS: a class-data archive holds classes from jars only, and JDK 17
    refuses to dump or use one when a non-empty directory stands on the class path *before*
    the last jar it archived from; with the directories last, the archive covers the JDK and
    every dependency, and the project's own classes (which a mutant build changes) are always
    read fresh from the directories. No dependency of java-algorand-sdk declares a class of
    the project's packages, so the order changes no resolution."""
    return [*dependencies, str((root / "target" / "test-classes").resolve()),
            str((root / "target" / "classes").resolve())]


def fetch_artifact(coordinates: str, dest: Path, toolchain: JavaToolchain, *, cwd: Path | None = None,
                   offline: bool = False, timeout: float = 600.0) -> Path:
    """One artifact (``group:artifact:version:type[:classifier]``) from Maven Central, through
    the req2test repository, copied into ``dest``; the copy is reused when present.
    ``RuntimeError`` when Maven cannot bring it."""
    _group, artifact, version, kind, *classifier = coordinates.split(":")
    name = f"{artifact}-{version}{'-' + classifier[0] if classifier else ''}.{kind}"
    target = dest / name
    if target.is_file():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    result = _mvn(toolchain, [f"{DEPENDENCY_PLUGIN}:copy", f"-Dartifact={coordinates}",
                              f"-DoutputDirectory={dest.resolve()}"], cwd or dest, timeout, offline)
    if not result.ok or not target.is_file():
        raise RuntimeError(f"cannot fetch {coordinates}: {result.output[-500:]}")
    return target


def jacoco_jars(toolchain: JavaToolchain, *, offline: bool = False) -> tuple[Path, Path]:
    """(agent, cli): JaCoCo's runtime agent and its command-line interface, under the cache."""
    dest = toolchain.cache / "jacoco" / JACOCO_VERSION
    return (fetch_artifact(JACOCO_AGENT, dest, toolchain, offline=offline),
            fetch_artifact(JACOCO_CLI, dest, toolchain, offline=offline))
