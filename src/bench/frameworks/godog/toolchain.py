"""The Go toolchain as req2test drives it: one shared module and build cache (provisioned once,
like ``node_modules``), the local toolchain only, and a project's godog suite compiled once into
a test binary that every scenario run then starts.

Why these settings:

- ``GOTOOLCHAIN=local``: go.mod's ``toolchain go1.25.3`` line would otherwise make a newer or
  older go try to download that toolchain; the installed go (1.26) builds a module that asks
  for ``go 1.25.0`` as it is (a go line newer than the local go would be an error instead).
- ``GOFLAGS=-mod=mod``: go.sum may lack an entry a test dependency needs; the build then
  resolves it through the module proxy instead of failing on a missing go.sum line.
- ``-buildvcs=false``: a corpus is a checkout without ``.git``, or lies inside another repository.
- ``-trimpath``: the compiled file names do not include the tree's directory, so the same
  sources built in two scratch trees hit the same build-cache entries (and godog's step
  locations, which use only the file's base name, stay the same).
- GOMODCACHE/GOCACHE under ``~/.cache/req2test/go`` (``$REQ2TEST_GO_CACHE`` overrides): both
  are content-addressed and safe for concurrent go commands, so one cache serves every project
  and every run; module files are read-only in it, as the go command makes them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.environments import cache_dir

GO_FALLBACK = "/usr/local/go/bin/go"


def cache_root() -> Path:
    """``$REQ2TEST_GO_CACHE``, else ``$XDG_CACHE_HOME/req2test/go`` (~/.cache)."""
    return cache_dir("go", "REQ2TEST_GO_CACHE")


@dataclass(frozen=True)
class GoToolchain:
    go: str
    cache: Path

    @classmethod
    def find(cls, cache: Path | None = None) -> GoToolchain:
        go = shutil.which("go") or (GO_FALLBACK if Path(GO_FALLBACK).is_file() else None)
        if go is None:
            raise RuntimeError("no go command on PATH (nor /usr/local/go/bin/go): install Go 1.25 or newer")
        return cls(go=go, cache=cache or cache_root())

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of every go command req2test runs (see the module docstring)."""
        base = {key: value for key, value in os.environ.items() if not key.startswith(("GO", "CGO_"))}
        base.update({
            "PATH": f"{Path(self.go).parent}:{base.get('PATH', '/usr/bin:/bin')}",
            "GOTOOLCHAIN": "local",
            "GOFLAGS": "-mod=mod -buildvcs=false -trimpath",
            "GOMODCACHE": str(self.cache / "mod"),
            "GOCACHE": str(self.cache / "build"),
            "GOPATH": str(self.cache / "gopath"),  # nothing is installed there; keeps ~/go untouched
            "GOTELEMETRY": "off",
        })
        for key in ("GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY"):
            if key in os.environ:
                base[key] = os.environ[key]
        base.update(extra or {})
        return base

    def version(self) -> str:
        """``go1.26.8`` (the ``go version`` word)."""
        out = subprocess.run([self.go, "version"], capture_output=True, text=True, check=True,
                             env=self.env()).stdout.split()
        return out[2] if len(out) > 2 else "unknown"


@dataclass(frozen=True)
class GoCommandResult:
    ok: bool
    seconds: float
    output: str  # the tail of stderr+stdout (compile errors land here)


def _go(toolchain: GoToolchain, args: list[str], cwd: Path, timeout: float) -> GoCommandResult:
    start = time.perf_counter()
    try:
        proc = subprocess.run([toolchain.go, *args], cwd=cwd, env=toolchain.env(), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return GoCommandResult(False, time.perf_counter() - start, f"go {args[0]} timed out after {timeout:.0f} s")
    text = (proc.stderr + proc.stdout).decode(errors="replace")
    return GoCommandResult(proc.returncode == 0, time.perf_counter() - start, text[-6000:])


def module_path(root: Path) -> str:
    """The ``module`` line of ``root/go.mod``."""
    for line in (root / "go.mod").read_text(encoding="utf-8").splitlines():
        words = line.split("//", 1)[0].split()
        if len(words) == 2 and words[0] == "module":
            return words[1].strip('"')
    raise ValueError(f"{root / 'go.mod'} has no module line")


def download_modules(root: Path, toolchain: GoToolchain, timeout: float = 900.0) -> GoCommandResult:
    """``go mod download``: every module go.mod requires, into the shared module cache."""
    return _go(toolchain, ["mod", "download"], root, timeout)


def first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0].strip()[:300] if lines else ""


def compile_error(output: str) -> str:
    """The first compiler message of ``go test -c`` output (``file.go:L:C: ...``), else its first line."""
    for line in output.splitlines():
        if ".go:" in line and not line.startswith("#"):
            return line.strip()[:300]
    return first_line(output)


def cover_patterns(production: list[str]) -> list[str]:
    """``-coverpkg`` patterns of production directories (``abi`` -> ``./abi/...``)."""
    return [f"./{p.strip('/')}/..." if p not in ("", ".") else "./..." for p in production]


def build_test_binary(root: Path, package: str, output: Path, toolchain: GoToolchain, *,
                      cover: list[str] | None = None, stripped: bool = False, tags: tuple[str, ...] = (),
                      timeout: float = 1800.0) -> GoCommandResult:
    """``go test -c -o OUTPUT ./PACKAGE``: the package's test binary (its TestMain runs godog).

    ``cover``: production directories to instrument (``-cover -covermode=set -coverpkg=...``);
    each run of the binary then writes a profile with ``-test.coverprofile``. ``set`` is enough
    (a line ran or not) and cheaper than ``count``/``atomic``. Patterns no package of the test
    binary imports only draw a warning from go.

    ``stripped``: no symbol table and no DWARF (``-ldflags=-s -w``), so a process cannot find a
    variable's address in its own executable (a schemata binary's selected mutant). ``tags``:
    ``-tags``, the build tags the suite's files need (``//go:build http``).

    Never a vet pass (``-vet=off``): vet is a linter, not the compiler, and every binary of one
    verdict must build alike — a mutant such as ``fmt.Errorf("")`` with an argument left over is
    valid Go that vet refuses, so a plain rebuild with vet disagreed with its schemata build on
    coddy-agent; a prediction's verdict build and traced build must not disagree either."""
    output.parent.mkdir(parents=True, exist_ok=True)
    args = ["test", "-c", "-vet=off", "-o", str(output.resolve())]
    if stripped:
        args += ["-ldflags=-s -w"]
    if tags:
        args.append("-tags=" + ",".join(tags))
    if cover:
        args += ["-cover", "-covermode=set", "-coverpkg=" + ",".join(cover_patterns(cover))]
    args.append("." if package.strip("/") in ("", ".") else "./" + package.strip("/"))
    return _go(toolchain, args, root, timeout)
