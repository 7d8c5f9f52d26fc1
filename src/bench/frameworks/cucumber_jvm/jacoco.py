"""Per-scenario coverage from JaCoCo: the runtime agent in the scenario's JVM writes an ``.exec``
file at JVM exit, ``jacococli report`` turns it into XML against the production classes, and
this module reads covered lines per source file from the XML.

- agent: ``-javaagent:org.jacoco.agent-0.8.12-runtime.jar=destfile=FILE,includes=PKG.*``
  (``includes`` is a class-name wildcard: only production classes are instrumented, which
  keeps the agent's start-up cost to the classes a scenario loads). The file is written by a
  shutdown hook, so it holds everything the JVM ran (glue construction and hooks included),
  and a JVM killed by a signal 9 writes none. ``output=file`` is the default.
- report: ``java -jar org.jacoco.cli-0.8.12-nodeps.jar report EXEC --classfiles
  target/classes --sourcefiles src/main/java --xml OUT`` (a JVM of its own: ~1 s of CPU). The
  class files must be the ones that ran (JaCoCo matches them by a CRC64 class id), so report
  against the build the scenario ran on; the exec file holds test classes too, which the
  report ignores since only ``target/classes`` is analysed.
- XML: ``report > package[name=com/x/y] > sourcefile[name=Z.java] > line[nr, mi, ci, mb, cb]``;
  a line with ``ci > 0`` (covered instructions) ran. Every line that holds bytecode is listed,
  so the listed lines are the instrumented ones. Source paths are ``PACKAGE/FILE`` relative to
  a source root (``com/algorand/algosdk/abi/ABIType.java``).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree


@dataclass(frozen=True)
class LineCoverage:
    covered: dict[str, frozenset[int]]  # source path relative to a source root -> lines with covered instructions
    instrumented: dict[str, frozenset[int]]  # every line with bytecode

    def under(self, root: str) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
        """(covered, instrumented) keyed by project-relative paths (``root`` = ``src/main/java``)."""
        prefix = root.strip("/") + "/" if root.strip("/") else ""
        return ({prefix + k: set(v) for k, v in self.covered.items()},
                {prefix + k: set(v) for k, v in self.instrumented.items()})


def agent_argument(agent: Path, destfile: Path, includes: Iterable[str]) -> str:
    """The ``-javaagent:`` option (``includes``: packages, each covered with its subpackages)."""
    patterns = ":".join(f"{p}.*" for p in includes)
    return f"-javaagent:{agent.resolve()}=destfile={destfile.resolve()},includes={patterns}"


def parse_xml(text: str) -> LineCoverage:
    """A JaCoCo XML report's lines; ``ValueError`` for text that is not one."""
    try:
        root = ElementTree.fromstring(text)  # the DOCTYPE's external DTD is not fetched
    except ElementTree.ParseError as exc:
        raise ValueError(f"not XML: {exc}") from exc
    if root.tag != "report":
        raise ValueError(f"not a JaCoCo report (root element {root.tag!r})")
    covered: dict[str, frozenset[int]] = {}
    instrumented: dict[str, frozenset[int]] = {}
    for package in root.iter("package"):
        prefix = package.get("name", "")
        for source in package.findall("sourcefile"):
            path = f"{prefix}/{source.get('name', '')}" if prefix else source.get("name", "")
            lines = [(int(line.get("nr", "0")), int(line.get("ci", "0"))) for line in source.findall("line")]
            if not lines:
                continue
            instrumented[path] = frozenset(nr for nr, _ in lines)
            hit = frozenset(nr for nr, ci in lines if ci > 0)
            if hit:
                covered[path] = hit
    return LineCoverage(covered, instrumented)


@dataclass(frozen=True)
class ReportResult:
    coverage: LineCoverage | None
    problem: str
    seconds: float


def report(java: str, cli: Path, exec_file: Path, classes: Path, sources: Path, xml_out: Path,
           timeout: float = 300.0) -> ReportResult:
    """``jacococli report`` of one exec file, read back as line coverage."""
    start = time.perf_counter()
    if not exec_file.is_file():
        return ReportResult(None, "no exec file written (the JVM ended without its shutdown hooks)", 0.0)
    argv = [java, "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-jar", str(cli.resolve()), "report",
            str(exec_file.resolve()), "--classfiles", str(classes.resolve()), "--sourcefiles", str(sources.resolve()),
            "--xml", str(xml_out.resolve()), "--quiet"]
    proc = subprocess.run(argv, capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if proc.returncode != 0 or not xml_out.is_file():
        return ReportResult(None, f"jacococli report failed: {(proc.stdout + proc.stderr).decode(errors='replace')[-400:]}",
                            seconds)
    try:
        return ReportResult(parse_xml(xml_out.read_text(encoding="utf-8")), "", seconds)
    except ValueError as exc:
        return ReportResult(None, str(exc), seconds)


@dataclass(frozen=True)
class CoverageBaseline:
    """What a scenario's JVM runs that is not the scenario's: loading the suite (``load``) and,
    per feature, its setup/teardown companions run alone (``companions``). The builder leaves
    both out of the ground truth's covered lines and the judge out of a prediction's, so a test
    that does nothing covers nothing."""

    load: dict[str, set[int]]
    companions: dict[str, dict[str, set[int]]]

    def scenario_lines(self, feature: str, lines: dict[str, set[int]]) -> dict[str, set[int]]:
        companions = self.companions.get(feature, {})
        return {f: hit - self.load.get(f, set()) - companions.get(f, set()) for f, hit in lines.items()}
