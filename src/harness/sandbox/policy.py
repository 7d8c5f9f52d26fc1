"""Named sandbox policies: TOML files in ``sandboxes/``; users add their own.

A policy is selected by name or by path. Names are looked up, in order, in the
directories of ``REQ2TEST_SANDBOXES`` (os.pathsep-separated), ``./sandboxes``, the
user's ``~/.config/req2test/sandboxes`` and the ones shipped with req2test.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from pydantic import ValidationError

from harness.resources import resource_dir
from harness.sandbox.base import SandboxError, SandboxPolicy

SHIPPED = resource_dir("sandboxes")


def policy_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get("REQ2TEST_SANDBOXES", "").split(os.pathsep) if p]
    dirs += [Path.cwd() / "sandboxes", Path.home() / ".config" / "req2test" / "sandboxes", SHIPPED]
    seen: list[Path] = []
    for directory in dirs:
        if directory not in seen:
            seen.append(directory)
    return seen


def available_policies() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for directory in policy_dirs():
        if directory.is_dir():
            for path in sorted(directory.glob("*.toml")):
                found.setdefault(path.stem, path)
    return found


def load_policy(name_or_path: str | Path) -> SandboxPolicy:
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and path.is_file()):
        known = available_policies()
        if str(name_or_path) not in known:
            names = ", ".join(sorted(known)) or "none"
            raise SandboxError(f"no sandbox policy {str(name_or_path)!r} (known: {names}; "
                               f"or give the path of a .toml file)")
        path = known[str(name_or_path)]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SandboxError(f"{path}: cannot read policy: {exc}") from exc
    data.setdefault("name", path.stem)
    try:
        return SandboxPolicy.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(file)"
        raise SandboxError(f"{path}: {where}: {first['msg']}") from exc
