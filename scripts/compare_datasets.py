"""Compare two dataset directories field by field, ignoring what is measured, not built.

Used to show that a refactor leaves datasets unchanged ("byte-identical except the
builder version"): every JSON/JSONL record is compared after dropping the fields that
hold wall-clock measurements or the build time; every other file is compared as bytes.

Usage:
    python scripts/compare_datasets.py OLD_DIR NEW_DIR     # exit 0: identical, 1: differences listed
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# measured, not built: the build's clock and per-run wall times
MEASURED = {"created", "stage_seconds", "runtime_seconds", "generation_seconds", "execution_seconds", "files",
            "builder_version",
            "seconds"}  # cucumber-js's mutation.fresh_check.seconds: the check's wall time


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in MEASURED and not k.endswith("_seconds")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _records(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [_strip(json.loads(line)) for line in text.splitlines() if line.strip()]
    return [_strip(json.loads(text))]


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{where}.{key}: only in {'new' if key not in a else 'old'}"
            found = _first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        for index, (x, y) in enumerate(zip(a, b)):
            found = _first_difference(x, y, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {str(a)[:80]!r} vs {str(b)[:80]!r}"


def compare(old: Path, new: Path) -> list[str]:
    differences = []
    old_files = {p.relative_to(old).as_posix() for p in old.rglob("*") if p.is_file()}
    new_files = {p.relative_to(new).as_posix() for p in new.rglob("*") if p.is_file()}
    for rel in sorted(old_files ^ new_files):
        differences.append(f"{rel}: only in {'old' if rel in old_files else 'new'}")
    for rel in sorted(old_files & new_files):
        a, b = old / rel, new / rel
        if a.suffix in (".json", ".jsonl"):
            found = _first_difference(_records(a), _records(b))
            if found:
                differences.append(f"{rel}{found}")
        elif a.read_bytes() != b.read_bytes():
            differences.append(f"{rel}: bytes differ")
    return differences


def main() -> None:
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    old, new = Path(sys.argv[1]), Path(sys.argv[2])
    for directory in (old, new):
        if not (directory / "dataset.json").is_file():
            print(f"error: {directory} is not a dataset directory (no dataset.json)", file=sys.stderr)
            sys.exit(2)
    differences = compare(old, new)
    for line in differences:
        print(line)
    files = sum(1 for p in old.rglob("*") if p.is_file())
    print(f"{files} files compared: {'identical except measured times' if not differences else f'{len(differences)} differ'}")
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
