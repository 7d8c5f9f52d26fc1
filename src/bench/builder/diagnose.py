"""Why a build run failed, in words, when the warm worker's result does not say.

The worker reports a failing step with its exception, a load error with its traceback, but a
failing hook only as a flag (behave keeps the hook's message on the scenario, not on a step).
An exclusion that reads "a before/after hook failed" leaves a user to guess; a fresh ``behave``
process over the same tree (the worker's copy, or the workspace the run used) prints behave's
own ``HOOK-ERROR in <hook>: <exception>: <message>`` line, which becomes the detail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

# failures whose worker detail already names the error: no fresh run for them
SPECIFIC = frozenset({"assertion_failed", "error", "init_failed", "step_undefined", "step_pending", "timeout",
                      "crashed", "selection_mismatch", "skipped_by_runner", "aborted"})

_EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Step|Failure|Exit|Interrupt|Warning)"
                             r"(?::.*)?)$")


def first_error(output: str) -> str | None:
    """The first error a plain-formatted behave run printed: a hook error line (with the
    indented lines that continue it), else the exception line ending the first traceback."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if "HOOK-ERROR" in line:
            text = [line.strip()[line.strip().index("HOOK-ERROR"):]]
            for more in lines[i + 1:]:
                if not more.strip() or not more.startswith((" ", "\t")):
                    break
                text.append(more.strip())
            return _one_line(" ".join(text))
    in_traceback = False
    for line in lines:
        if line.strip().startswith("Traceback (most recent call last)"):
            in_traceback = True
        elif in_traceback and _EXCEPTION_LINE.match(line):
            return _one_line(line.strip())
    return None


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()[:300]


def fresh_first_error(tree: Path, feature: str, lines: list[int], python_path: list[str], *,
                      python: str = sys.executable, isolation: str = "none", writable: list[Path] | None = None,
                      readonly: list[Path] | None = None, timeout: float = 60.0) -> str | None:
    """Run the scenario in a fresh behave process in ``tree`` (under bubblewrap when
    ``isolation`` is "bwrap") and return its first error, or None when none was printed."""
    command = [python, "-m", "behave", "--no-capture", "--no-capture-stderr", "--no-color", "-f", "plain",
               "--no-summary", "--no-snippets", *[f"{feature}:{line}" for line in lines]]
    if isolation == "bwrap":
        from bench.isolation import wrap

        command = wrap(command, writable=list(writable or [tree]), readonly=list(readonly or []), cwd=tree)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE")}
    env["PYTHONPATH"] = os.pathsep.join(str(tree / p) for p in python_path)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        proc = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, errors="replace",
                              timeout=timeout, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return first_error(proc.stdout + "\n" + proc.stderr)
