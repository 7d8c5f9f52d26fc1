"""Resolve a SOURCE argument (a local directory or a PyPI sdist spec) into a pinned project.

A sdist is downloaded once into a cache and pinned by the archive's sha256; a local
directory is pinned by a content hash of its tree. The project's layout (features
dir, import path, production scope) comes from ``[tool.req2test]`` in its
pyproject.toml when present, otherwise from conventions (``features/``, ``src/``).
"""

from __future__ import annotations

import ast
import configparser
import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from bench.environments import file_lock, pip_reason
from bench.errors import UserError
from bench.tree_rules import BUILD_OUTPUT, COVERAGE_DATA, EDITOR_STATE, NOT_PROJECT_CONTENT

SDIST_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)$")
# never part of a project's snapshot: VCS data, caches, and installed packages (a JS project's
# node_modules is provisioned from its lockfile, never copied). Narrower than the views' rule:
# the snapshot (and its sha256 in every dataset card) has always kept these names, and `build`,
# `dist` or `venv` can be a project's own package; skipping them would change existing datasets.
IGNORED_NAMES = NOT_PROJECT_CONTENT - BUILD_OUTPUT - COVERAGE_DATA - EDITOR_STATE - {".ruff_cache", ".nox", "venv"}


class SourceError(UserError):
    """A user-facing problem with SOURCE; the message is one line."""


@dataclass(frozen=True)
class ProjectSource:
    name: str
    version: str
    spec: str
    root: Path
    sha256: str
    features_dir: str
    python_path: list[str]
    production: list[str]
    dependencies: list[str]
    tags: list[str] = field(default_factory=list)  # behave tags that select scenarios (any of); [] = all
    framework: str = "behave"  # registry name (bench.frameworks.registry)
    # the project's own environment (bench.environments): the requirements installed into it,
    # and its interpreter; [] and req2test's own interpreter when nothing was missing
    environment: list[str] = field(default_factory=list)
    python: str = sys.executable


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "req2test" / "sdists"


def resolve_source(source: str, cache_dir: Path | None = None) -> ProjectSource:
    path = Path(source).expanduser()
    if path.exists():
        if not path.is_dir():
            raise SourceError(f"{source} is a file; SOURCE must be a project directory or NAME==VERSION")
        return _describe(path.resolve(), spec=str(path.resolve()), sha=tree_sha256(path.resolve()))
    match = SDIST_SPEC.match(source.strip())
    if not match:
        raise SourceError(f"{source!r} is neither an existing directory nor a sdist spec like python-docx==1.2.0")
    root, sha = fetch_sdist(match["name"], match["version"], cache_dir or default_cache_dir())
    return _describe(root, spec=source.strip(), sha=sha)


def fetch_sdist(name: str, version: str, cache_dir: Path) -> tuple[Path, str]:
    """Download (once) and unpack NAME==VERSION's sdist; returns (tree, archive sha256).

    Two builds of the same sdist may start together: a lock per sdist serialises them, and
    the archive and the tree each appear by one rename, so neither ever sees half of one."""
    target = cache_dir / f"{_normalise(name)}-{version}"
    cache_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(cache_dir / f"{target.name}.lock"):
        archive_dir = target / "archive"
        tree_dir = target / "tree"
        archives = sorted(archive_dir.glob("*")) if archive_dir.is_dir() else []
        if not archives:
            download = target / "download"
            shutil.rmtree(download, ignore_errors=True)
            download.mkdir(parents=True)
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 "--disable-pip-version-check", "-q", f"{name}=={version}", "-d", str(download)],
                capture_output=True, text=True, check=False)
            if proc.returncode != 0 or not any(download.iterdir()):
                shutil.rmtree(target, ignore_errors=True)
                reason = pip_reason(proc.stderr)
                raise SourceError(f"no sdist for {name}=={version} on the package index ({reason})")
            shutil.rmtree(archive_dir, ignore_errors=True)
            download.rename(archive_dir)
            archives = sorted(archive_dir.glob("*"))
        archive = archives[0]
        sha = hashlib.sha256(archive.read_bytes()).hexdigest()
        if not tree_dir.is_dir():
            staging = target / "staging"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            _unpack(archive, staging)
            entries = list(staging.iterdir())
            top = entries[0] if len(entries) == 1 and entries[0].is_dir() else staging
            top.rename(tree_dir)
            shutil.rmtree(staging, ignore_errors=True)
    return tree_dir, sha


def _unpack(archive: Path, dest: Path) -> None:
    if archive.name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tar")):
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    elif archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(dest)
    else:
        raise SourceError(f"unsupported sdist archive {archive.name}")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def tree_sha256(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(iter_tree(root)):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def iter_tree(root: Path):
    for path in root.rglob("*"):
        if any(part in IGNORED_NAMES for part in path.relative_to(root).parts):
            continue
        if path.is_file() and not path.is_symlink() and path.suffix != ".pyc":
            yield path


def _describe(root: Path, spec: str, sha: str) -> ProjectSource:
    pyproject = root / "pyproject.toml"
    data = _pyproject(root)
    meta = data.get("project", {})
    settings = data.get("tool", {}).get("req2test", {})
    if not settings and (root / "req2test.toml").is_file():
        # a project without a pyproject.toml (e.g. JavaScript) keeps the same table here
        pyproject = root / "req2test.toml"
        settings = _toml(pyproject).get("tool", {}).get("req2test", {})
    setup = _setup_literals(root)
    setup_name, setup_version = setup.get("name"), setup.get("version")
    package = _package_json(root)
    name = _normalise(str(meta.get("name") or (setup_name if isinstance(setup_name, str) else "")
                          or package.get("name") or root.name))
    version = str(meta.get("version") or _pkg_info_version(root)
                  or (setup_version if isinstance(setup_version, str) else "") or package.get("version") or "0")
    if SDIST_SPEC.match(spec):
        name, version = _normalise(spec.split("==")[0]), spec.split("==")[1]
    features_dir = str(settings.get("features", "features"))
    if not (root / features_dir).is_dir():
        raise SourceError(f"{root} has no {features_dir}/ directory: not a behave project "
                          f"(set [tool.req2test] features = \"...\" if it lives elsewhere)")
    if not any((root / features_dir).rglob("*.feature")):
        raise SourceError(f"{root / features_dir} holds no .feature files")
    python_path, production = _layout(root, settings, features_dir)
    if not production:
        raise SourceError(f"{root}: no production package found under {python_path} "
                          f"(set [tool.req2test] production = [\"src/pkg\"])")
    for entry in production:
        if not (root / entry).exists():
            raise SourceError(f"{root}: production path {entry} does not exist")
    tags = settings.get("tags", [])
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise SourceError(f"{pyproject}: [tool.req2test] tags must be a list of behave tags")
    from bench.frameworks.registry import DEFAULT_FRAMEWORK, available, get_framework

    framework = settings.get("framework", DEFAULT_FRAMEWORK)

    known = available()
    if not isinstance(framework, str) or framework not in known:
        raise SourceError(f"{pyproject}: [tool.req2test] framework = {framework!r} is not a known test framework "
                          f"(available: {', '.join(known)})")
    # Python requirements only for a Python project; a JS project's packages come from its lockfile
    dependencies = runtime_requirements(root, data) if get_framework(framework).language.name == "python" else []
    return ProjectSource(name=name, version=version, spec=spec, root=root, sha256=sha,
                         features_dir=features_dir, python_path=python_path,
                         production=production, dependencies=dependencies,
                         tags=[t.strip().lstrip("@") for t in tags if t.strip()], framework=framework)


def _layout(root: Path, settings: dict, features_dir: str) -> tuple[list[str], list[str]]:
    """(python_path, production) from ``[tool.req2test]``, else the conventions."""
    python_path = list(settings.get("python_path") or (["src"] if (root / "src").is_dir() else ["."]))
    production = list(settings.get("production") or _detect_packages(root, python_path, features_dir))
    return python_path, production


def project_layout(root: Path, features_dir: str) -> tuple[list[str], list[str]]:
    """A project tree's (python_path, production), read as ``resolve_source`` reads them, for
    code that holds only the tree (a dataset's snapshot); a settings file it cannot read gives
    the conventions."""
    try:
        settings = _pyproject(root).get("tool", {}).get("req2test", {})
        if not settings and (root / "req2test.toml").is_file():
            settings = _toml(root / "req2test.toml").get("tool", {}).get("req2test", {})
    except SourceError:
        settings = {}
    return _layout(root, settings if isinstance(settings, dict) else {}, features_dir)


def runtime_requirements(root: Path, pyproject: dict | None = None) -> list[str]:
    """What running the project's behave suite needs: its declared dependencies plus the
    step modules' own (``[tool.req2test] test_dependencies``, e.g. glom). ``pyproject``:
    the file's data when the caller has already read it."""
    data = _pyproject(root) if pyproject is None else pyproject
    extra = data.get("tool", {}).get("req2test", {}).get("test_dependencies", [])
    if not isinstance(extra, list) or not all(isinstance(d, str) for d in extra):
        raise SourceError(f"{root / 'pyproject.toml'}: [tool.req2test] test_dependencies must be a list of "
                          f"requirements")
    return declared_dependencies(root, data) + [str(d) for d in extra]


def _pyproject(root: Path) -> dict:
    """The project's pyproject.toml as data ({} when it has none); invalid TOML is the user's
    problem, said in one line."""
    return _toml(root / "pyproject.toml")


def _toml(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SourceError(f"{path} is not valid TOML: {exc}") from exc


def _package_json(root: Path) -> dict:
    """A JavaScript project's package.json ({} without one or when it is not an object)."""
    path = root / "package.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SourceError(f"{path} is not valid JSON: {exc}") from exc
    return data if isinstance(data, dict) else {}


def declared_dependencies(root: Path, pyproject: dict | None = None) -> list[str]:
    """The project's runtime requirements, wherever it declares them: pyproject's
    ``[project].dependencies``, else setup.cfg's ``[options] install_requires``, else the
    ``install_requires`` literal of setup.py (read with ``ast``: a project's setup.py is
    never run to learn this)."""
    project = (_pyproject(root) if pyproject is None else pyproject).get("project", {})
    if "dependencies" in project and "dependencies" not in project.get("dynamic", []):
        return [str(d) for d in project.get("dependencies", [])]
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(setup_cfg, encoding="utf-8")
            raw = parser.get("options", "install_requires", fallback="")
        except configparser.Error:
            raw = ""
        found = [line.strip() for line in raw.splitlines() if line.strip() and not line.strip().startswith("#")]
        if found:
            return found
    requires = _setup_literals(root).get("install_requires", [])
    return [r for r in requires if isinstance(r, str)] if isinstance(requires, (list, tuple)) else []


def _setup_literals(root: Path) -> dict[str, object]:
    """The keyword arguments of setup.py's ``setup(...)`` call whose values are literals
    (directly or through a module-level name bound to one), read with ``ast`` in one pass:
    a project's setup.py is never run. {} without a setup.py or a readable call."""
    setup_py = root / "setup.py"
    if not setup_py.is_file():
        return {}
    try:
        tree = ast.parse(setup_py.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return {}
    assigned: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = node.value
    literals: dict[str, object] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) != "setup":
            continue
        for keyword in node.keywords:
            value = keyword.value
            if isinstance(value, ast.Name):
                value = assigned.get(value.id, value)
            try:
                literals.setdefault(keyword.arg or "", ast.literal_eval(value))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return literals


def _pkg_info_version(root: Path) -> str | None:
    info = root / "PKG-INFO"
    if info.is_file():
        for line in info.read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return None


def _detect_packages(root: Path, python_path: list[str], features_dir: str) -> list[str]:
    skip = {"tests", "test", "docs", "features", "examples", "benchmarks", *Path(features_dir).parts[:1]}
    found = []
    for entry in python_path:
        base = root / entry
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            if child.is_dir() and (child / "__init__.py").is_file() and child.name not in skip:
                found.append(child.relative_to(root).as_posix())
    return found


def missing_dependencies(source: ProjectSource) -> list[str]:
    """Declared runtime dependencies of the project that are not installed here."""
    missing = []
    for raw in source.dependencies:
        try:
            req = Requirement(raw)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(raw)
            continue
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            missing.append(raw)
    return missing


def with_own_environment(source: ProjectSource, requirements: list[str], log: object = None) -> ProjectSource:
    """``source`` run by the interpreter of its own environment holding ``requirements`` (made
    once per requirement set; req2test's own interpreter is never changed)."""
    from bench.environments import EnvironmentSetupError, ensure_environment

    try:
        python = ensure_environment(requirements, log=log)
    except EnvironmentSetupError as exc:
        raise SourceError(str(exc)) from exc
    return replace(source, environment=sorted(requirements), python=str(python))
