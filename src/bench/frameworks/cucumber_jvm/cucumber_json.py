"""Read a Cucumber-JVM run from its JSON formatter (``--plugin json:FILE``), cucumber-jvm 6.6.0
(``io.cucumber.core.plugin.JsonFormatter``).

What it writes, once, when the run finishes: a list of features, each with ``uri`` (the
feature's URI as cucumber-jvm resolved the command-line path: ``file:REL/PATH.feature`` for a
relative path, ``file:///ABS/PATH.feature`` for an absolute one, ``classpath:...`` for a
classpath one) and ``elements``. A scenario whose feature has a ``Background`` comes as *two*
elements, ``{"type": "background", "steps": [...]}`` right before ``{"type": "scenario",
...}`` (the background is repeated for every scenario); this reader folds the background's
steps into the scenario's, in run order. A scenario element has ``line`` (the scenario's
line, or for an outline the *Examples row's* line), ``name`` (placeholders substituted),
``keyword`` ("Scenario Outline"), ``tags`` (feature, scenario and examples tags, ``@``
included), ``steps`` and, when hooks ran, ``before``/``after`` lists of hook results.

A step: ``keyword`` ("Given ", trailing space), ``name`` (the step text), ``line``,
``match.location`` and ``result`` (``status``: passed, failed, skipped, pending, undefined,
ambiguous; ``error_message``: the whole stack trace; ``duration`` in nanoseconds).
``match.location`` is the Java method the step ran, as ``Method.toString`` minus modifiers
and return type: ``com.algorand.algosdk.unit.Base.a_signing_account_with_address_and_mnemonic(java.lang.String,java.lang.String)``
— fully qualified class (``$`` for a nested class), method name and parameter types, but no
file and no line: a step definition is found in source by class and method (overloads by the
parameter types). Undefined steps have no location.

A JVM that dies before the run finishes (``System.exit`` in a step, a timeout, a crash)
writes no JSON at all: the report is empty and says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

STATUSES = frozenset({"passed", "failed", "skipped", "undefined", "pending", "ambiguous", "unused"})
# Class.method(param,types): class names may hold $ (nested), parameters may be arrays or generics-free types
_LOCATION = re.compile(r"^(?P<cls>[\w$.]+)\.(?P<method>[\w$<>]+)\((?P<params>[^()]*)\)$")


@dataclass(frozen=True)
class JavaMethod:
    """The Java method a step or hook ran."""

    class_name: str  # fully qualified, ``$`` for a nested class
    method: str
    parameter_types: tuple[str, ...]

    @property
    def package(self) -> str:
        return self.class_name.rsplit(".", 1)[0] if "." in self.class_name else ""

    @property
    def source_path(self) -> str:
        """The conventional source file under a source root (``com/x/Outer.java`` for ``com.x.Outer$Inner``)."""
        return self.class_name.split("$", 1)[0].replace(".", "/") + ".java"

    @property
    def simple_class(self) -> str:
        return self.class_name.rsplit(".", 1)[-1]


def parse_location(raw: str) -> JavaMethod | None:
    match = _LOCATION.match(raw.strip())
    if match is None:
        return None
    params = tuple(p.strip() for p in match["params"].split(",") if p.strip())
    return JavaMethod(match["cls"], match["method"], params)


@dataclass(frozen=True)
class StepResult:
    keyword: str  # "Given", "When", "Then", "And", "But", "*" (the trailing space dropped)
    text: str
    line: int  # the step's line in the feature file
    status: str  # passed / failed / skipped / undefined / pending / ambiguous
    error: str = ""
    match: JavaMethod | None = None
    location: str = ""  # match.location as written
    background: bool = False  # the step came from the feature's Background
    duration_ns: int = 0


@dataclass(frozen=True)
class HookResult:
    status: str
    match: JavaMethod | None
    location: str
    error: str = ""


@dataclass(frozen=True)
class ScenarioResult:
    uri: str  # the feature path, ``file:`` dropped (see ``uri_path``)
    line: int  # the scenario's line, or the Examples row's
    name: str
    keyword: str  # "Scenario", "Scenario Outline", ...
    tags: tuple[str, ...]
    steps: tuple[StepResult, ...]
    before: tuple[HookResult, ...] = ()
    after: tuple[HookResult, ...] = ()

    @property
    def passed(self) -> bool:
        return (bool(self.steps) and all(s.status == "passed" for s in self.steps)
                and all(h.status == "passed" for h in (*self.before, *self.after)))

    @property
    def status(self) -> str:
        """The first status that is not ``passed`` (a failed hook counts as failed), else passed."""
        statuses = [s.status for s in self.steps] + [h.status for h in (*self.before, *self.after)]
        for wanted in ("failed", "ambiguous", "undefined", "pending", "skipped"):
            if wanted in statuses:
                return wanted
        return "passed" if self.steps else "empty"


@dataclass(frozen=True)
class CucumberReport:
    scenarios: tuple[ScenarioResult, ...] = ()
    problem: str = ""  # why there is no report (no file, not JSON, not the formatter's shape)
    features: tuple[str, ...] = ()  # the feature paths reported

    @property
    def written(self) -> bool:
        return not self.problem


def uri_path(uri: str) -> str:
    """``file:a/b.feature`` -> ``a/b.feature``; ``file:///x/b.feature`` -> ``/x/b.feature``;
    ``classpath:`` URIs and plain paths are kept as they are."""
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return uri


def _error(result: dict) -> str:
    return str(result.get("error_message", ""))[:4000]


def _step(raw: dict, background: bool) -> StepResult:
    result = raw.get("result") or {}
    status = str(result.get("status", "unknown")).lower()
    location = str((raw.get("match") or {}).get("location", ""))
    return StepResult(keyword=str(raw.get("keyword", "")).strip(), text=str(raw.get("name", "")),
                      line=int(raw.get("line", 0)), status=status if status in STATUSES else "unknown",
                      error=_error(result), match=parse_location(location) if location else None,
                      location=location, background=background, duration_ns=int(result.get("duration", 0) or 0))


def _hook(raw: dict) -> HookResult:
    result = raw.get("result") or {}
    location = str((raw.get("match") or {}).get("location", ""))
    status = str(result.get("status", "unknown")).lower()
    return HookResult(status=status if status in STATUSES else "unknown",
                      match=parse_location(location) if location else None, location=location, error=_error(result))


def parse_report(text: str) -> CucumberReport:
    """The run a cucumber-jvm JSON document tells."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return CucumberReport(problem=f"not JSON: {exc}")
    if not isinstance(data, list):
        return CucumberReport(problem="not a list of features")
    scenarios: list[ScenarioResult] = []
    paths: list[str] = []
    for feature in data:
        if not isinstance(feature, dict):
            return CucumberReport(problem="a feature that is not an object")
        path = uri_path(str(feature.get("uri", "")))
        paths.append(path)
        pending_background: list[StepResult] = []
        for element in feature.get("elements") or []:
            if not isinstance(element, dict):
                continue
            raw_steps = [s for s in element.get("steps") or [] if isinstance(s, dict)]
            if element.get("type") == "background":
                pending_background.extend(_step(s, True) for s in raw_steps)
                continue
            steps = (*pending_background, *(_step(s, False) for s in raw_steps))
            pending_background = []
            scenarios.append(ScenarioResult(
                uri=path, line=int(element.get("line", 0)), name=str(element.get("name", "")),
                keyword=str(element.get("keyword", "")),
                tags=tuple(str(t.get("name", "")) for t in element.get("tags") or [] if isinstance(t, dict)),
                steps=steps,
                before=tuple(_hook(h) for h in element.get("before") or [] if isinstance(h, dict)),
                after=tuple(_hook(h) for h in element.get("after") or [] if isinstance(h, dict))))
    return CucumberReport(scenarios=tuple(scenarios), features=tuple(paths))


def read_report(path: Path) -> CucumberReport:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return CucumberReport(problem="no report written (the JVM ended before cucumber's run finished)")
    except OSError as exc:
        return CucumberReport(problem=f"report unreadable: {exc}")
    if not text.strip():
        return CucumberReport(problem="empty report")
    return parse_report(text)
