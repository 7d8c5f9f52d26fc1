"""Make a ``FailureDetail`` from what a framework's clean run left: bounded, printable text
with the run's own directories taken out of every path.

Every framework's judge calls ``failure_detail`` with the clean run's pieces (the failing
step, the error, the traceback, the captured streams). The text is the prediction's own —
its messages, its prints — so it is treated as data: control characters go (a terminal or a
page shows it), each piece is cut to ``MAX_FAILURE_TEXT`` characters keeping its start and
its end (the end is nearest the failure), and the directories the run happened in (a
temporary tree, a sandbox mount) become relative paths, so two evaluations of the same
prediction record the same text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bench.model import MAX_FAILURE_TEXT, FailingStep, FailureDetail

# what a terminal or a browser would act on; tabs and newlines stay
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
HEAD_SHARE = 4  # a cut text keeps 1/HEAD_SHARE of the limit from its start, the rest from its end
MARKER_ROOM = 64  # the "[… n characters cut …]" marker fits in the limit: cutting again changes nothing


def clip(text: str, limit: int = MAX_FAILURE_TEXT) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` characters (its start and its end, a marker between) and
    how many characters were left out."""
    if len(text) <= limit:
        return text, 0
    head = limit // HEAD_SHARE
    tail = limit - head - MARKER_ROOM
    left_out = len(text) - head - tail
    return f"{text[:head]}\n[… {left_out} characters cut …]\n{text[-tail:]}", left_out


def printable(text: str) -> str:
    """Without terminal escapes and control characters, valid UTF-8 (a lone surrogate replaced)."""
    return _CONTROL.sub("", text.replace("\r\n", "\n")).encode("utf-8", "replace").decode("utf-8")


def relative(text: str, roots: Iterable[str]) -> str:
    """``text`` with each of ``roots`` (absolute directories, longest first) and a ``file://``
    spelling of it taken out of the paths it starts: ``/tmp/x/run/features/a.js:3`` → ``features/a.js:3``."""
    for root in sorted({r.rstrip("/") for r in roots if r and r.strip("/")}, key=len, reverse=True):
        text = text.replace(f"file://{root}/", "").replace(f"file:{root}/", "").replace(f"{root}/", "")
    return text


def python_frames_from_test(text: str, roots: Iterable[str]) -> str:
    """A Python traceback's text from its first frame under one of ``roots`` (or relative) on,
    in each ``Traceback`` section: the runner's and the evaluator's frames before it (which
    loaded or called the test) say nothing about the test; a line says how many went."""
    prefixes = tuple(r.rstrip("/") + "/" for r in roots if r)
    out: list[str] = []
    inside, dropping, dropped = False, False, 0
    for line in text.splitlines():
        if line.startswith("Traceback (most recent call last)"):
            inside, dropping = False, False
        elif line.startswith('  File "'):
            path = line[len('  File "'):].split('"', 1)[0]
            dropping = not inside and path.startswith("/") and not path.startswith(prefixes)
            if dropping:
                dropped += 1
                continue
            if dropped:
                out.append(f"  ({dropped} frames of the runner left out)")
                dropped = 0
            inside = True
        elif dropping and line.startswith("    "):
            continue  # the source lines of a dropped frame
        else:
            dropping = False
        out.append(line)
    return "\n".join(out)


def failure_detail(*, step: FailingStep | None = None, error: str = "", traceback: str = "", stdout: str = "",
                   stderr: str = "", roots: Iterable[str] = (), output_note: str = "",
                   cut_before: dict[str, int] | None = None) -> FailureDetail:
    """The clean run's failure, every text made printable, relative and bounded; ``cut_before``:
    characters the run itself already left out (a sandboxed worker bounds what it sends)."""
    roots = list(roots)
    texts: dict[str, str] = {}
    cut: dict[str, int] = {}
    for name, raw in (("error", error), ("traceback", traceback), ("stdout", stdout), ("stderr", stderr)):
        text, left_out = clip(relative(printable(raw or ""), roots).strip("\n"))
        texts[name] = text
        earlier = max(0, (cut_before or {}).get(name, 0)) if text else 0
        if left_out + earlier:
            cut[name] = left_out + earlier
    if step is not None:
        step = FailingStep(keyword=printable(step.keyword).strip()[:40], text=clip(printable(step.text), 2000)[0],
                           location=relative(printable(step.location), roots)[:1000])
    return FailureDetail(step=step, output_note=output_note, cut=cut, **texts)
