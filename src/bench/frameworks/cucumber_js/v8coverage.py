"""Production coverage of one cucumber-js run, from V8's own block coverage.

``NODE_V8_COVERAGE=DIR`` makes Node write, at exit, every script's functions with their
block ranges and counts, and — because tsx enables source maps — a ``source-map-cache``
mapping the transformed JavaScript back to the TypeScript the developers wrote. Nothing is
injected into the run: no instrumentation, no loader of ours.

A source line counts as covered when a mapped position on it lies in a range that ran: the
innermost V8 range around the position (ranges nest: module ⊃ function ⊃ block) has a count
above zero. So a function that never ran leaves its body uncovered. What runs while the suite
loads (module-level code: imports, class and function declarations) is measured once by a dry
run and taken away (``without``): behave's warm worker imports production before the traced
run starts, so its coverage has no import-time lines either, and with them an empty test of
js-algorand-sdk covered 93 % of what its ground truth covers.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

_BASE64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


@dataclass
class RunCoverage:
    """What one run executed in the production files (relative paths, 1-based lines)."""

    lines: dict[str, set[int]] = field(default_factory=dict)
    # (file, 1-based source line where a function that ran starts, V8's function name)
    functions: set[tuple[str, int, str]] = field(default_factory=set)

    def merge(self, other: RunCoverage) -> None:
        for file, lines in other.lines.items():
            self.lines.setdefault(file, set()).update(lines)
        self.functions |= other.functions

    def without(self, lines: dict[str, set[int]]) -> RunCoverage:
        """This coverage less ``lines`` (what loading the suite covers)."""
        kept = {f: v - lines.get(f, set()) for f, v in self.lines.items()}
        return RunCoverage(lines={f: v for f, v in kept.items() if v}, functions=set(self.functions))

    def as_lists(self) -> dict[str, list[int]]:
        return {f: sorted(v) for f, v in sorted(self.lines.items()) if v}


def decode_mappings(mappings: str) -> list[tuple[int, int, int, int]]:
    """A source map's ``mappings`` as (generated line, generated column, source index,
    source line), all 0-based; segments without a source are dropped."""
    segments: list[tuple[int, int, int, int]] = []
    source = source_line = 0
    for gen_line, group in enumerate(mappings.split(";")):
        column = 0
        for segment in group.split(","):
            if not segment:
                continue
            values = _vlq(segment)
            column += values[0]
            if len(values) >= 4:
                source += values[1]
                source_line += values[2]
                segments.append((gen_line, column, source, source_line))
    return segments


def _vlq(segment: str) -> list[int]:
    values: list[int] = []
    shift = value = 0
    for char in segment:
        digit = _BASE64[char]
        value += (digit & 31) << shift
        if digit & 32:
            shift += 5
            continue
        values.append(-(value >> 1) if value & 1 else value >> 1)
        shift = value = 0
    return values


def innermost_counts(ranges: list[tuple[int, int, int]], offsets: list[int]) -> dict[int, int]:
    """The count of the innermost range around each offset (0 outside every range).

    ``ranges`` are V8's (start, end, count), end exclusive, properly nested."""
    ordered = sorted(ranges, key=lambda r: (r[0], -r[1]))
    counts: dict[int, int] = {}
    stack: list[tuple[int, int, int]] = []
    i = 0
    for offset in sorted(set(offsets)):
        while i < len(ordered) and ordered[i][0] <= offset:
            while stack and stack[-1][1] <= ordered[i][0]:
                stack.pop()
            stack.append(ordered[i])
            i += 1
        while stack and stack[-1][1] <= offset:
            stack.pop()
        counts[offset] = stack[-1][2] if stack else 0
    return counts


Segment = tuple[int, int, int]  # (generated line, generated column, source line), 0-based


def script_coverage(functions: list[dict], segments: list[Segment],
                    line_lengths: list[int]) -> tuple[set[int], set[tuple[int, str]]]:
    """(covered 1-based source lines, functions that ran as (1-based start line, name)) of one
    script, given the mapped positions of its one source."""
    starts = [0]
    for length in line_lengths:
        starts.append(starts[-1] + length + 1)
    mapped = sorted((starts[gen_line] + column, line + 1) for gen_line, column, line in segments
                    if gen_line < len(starts))  # (generated offset, source line)
    offsets = [offset for offset, _ in mapped]
    ranges = [(r["startOffset"], r["endOffset"], r["count"]) for f in functions for r in f["ranges"]]
    counts = innermost_counts(ranges, offsets)
    covered = {line for offset, line in mapped if counts.get(offset, 0) > 0}
    ran: set[tuple[int, str]] = set()
    for function in functions:
        first = function["ranges"][0]
        if first["count"] <= 0 or not function.get("functionName"):
            continue
        # the first mapped position inside the function: its declaration's line
        k = bisect.bisect_left(offsets, first["startOffset"])
        if k < len(mapped) and mapped[k][0] < first["endOffset"]:
            ran.add((mapped[k][1], function["functionName"]))
    return covered, ran


def identity_segments(source: str) -> tuple[list[Segment], list[int]]:
    """The mapped positions of a script Node ran as written (plain JavaScript): every run of
    non-blank characters maps to itself, so the same rule applies to both kinds of file;
    and its line lengths."""
    segments: list[Segment] = []
    lengths: list[int] = []
    for number, line in enumerate(source.split("\n")):
        lengths.append(len(line))
        segments += [(number, match.start(), number) for match in re.finditer(r"\S+", line)]
    return segments, lengths


def read_coverage(directory: Path, tree: Path, production: set[str]) -> RunCoverage:
    """Merge every coverage file Node wrote in ``directory`` for the files in ``production``
    (paths relative to the run's tree as the process saw it: ``tree`` itself, or the mount
    point inside the sandbox). A script without a source map (plain JavaScript) is read from
    ``tree``."""
    from bench.frameworks.cucumber_js.runner import PROJECT_MOUNT

    result = RunCoverage()
    prefixes = [str(tree).rstrip("/") + "/", PROJECT_MOUNT + "/"]
    for path in sorted(directory.glob("coverage-*.json")) if directory.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a process killed while writing: its coverage is lost, not invented
        maps = data.get("source-map-cache") or {}
        for script in data.get("result", []):
            url = script.get("url", "")
            rel = _relative(url, prefixes)
            if rel not in production:
                continue
            cached = maps.get(url)
            if cached and isinstance(cached.get("data"), dict):
                sources = cached["data"].get("sources") or []
                index = next((k for k, s in enumerate(sources) if _relative(s, prefixes) == rel
                              or str(s).endswith("/" + rel.rsplit("/", 1)[-1])), 0)
                segments = [(g, c, line) for g, c, source, line in decode_mappings(cached["data"].get("mappings", ""))
                            if source == index]
                lengths = cached.get("lineLengths", [])
            elif (tree / rel).is_file():
                segments, lengths = identity_segments((tree / rel).read_text(encoding="utf-8", errors="replace"))
            else:
                continue
            lines, ran = script_coverage(script.get("functions", []), segments, lengths)
            result.lines.setdefault(rel, set()).update(lines)
            result.functions |= {(rel, line, name) for line, name in ran}
    return result


def _relative(url: str, prefixes: list[str]) -> str:
    path = unquote(urlparse(url).path) if url.startswith("file:") else url
    for prefix in prefixes:
        if path.startswith(prefix):
            return path[len(prefix):]
    return ""


def load_coverage(work: Path, features_dir: str, out_dir: Path, production: set[str], *, timeout: float,
                  isolation: str, compile_cache: Path | None) -> RunCoverage:
    """What a trusted ``--dry-run`` of the suite covers: every support file loaded, with what
    it requires, and no step run. The same run fills ``compile_cache`` (tsx's transform
    cache), which every later run mounts read-only: no prediction code ever runs in it."""
    from bench.frameworks.cucumber_js.runner import run_cucumber

    run_cucumber(work, [features_dir], out_dir, timeout=timeout, isolation=isolation, extra_args=["--dry-run"],
                 env=coverage_env(out_dir), compile_cache=compile_cache, writable_cache=compile_cache is not None)
    return read_coverage(out_dir / "v8", work, production)


def coverage_env(out_dir: Path) -> dict[str, str]:
    """The environment that makes a run write its coverage under ``out_dir/v8`` (a directory
    the run may write, inside the sandbox too)."""
    directory = out_dir / "v8"
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o777)  # the sandbox's uid is nobody
    return {"NODE_V8_COVERAGE": str(directory)}
