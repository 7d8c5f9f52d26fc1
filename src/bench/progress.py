"""The one progress interface of the library: what a long stage (a build, an evaluation, a
generation) reports to whoever displays it.

It lives in bench, not in a CLI, so library code on both layers can accept a display without
importing one: bench never imports harness, and no library module imports a CLI. The displays
themselves (rich bars, log lines) are in ``bench.console``; harness adds its own run display.

``close()`` is deliberately not part of the protocol: whoever creates a display closes it; a
function that is handed one only reports to it.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Progress(Protocol):
    def stage(self, name: str, total: int | None = None) -> None:
        """A new stage begins (ending the previous one); ``total``: its units of work, if known."""
        ...

    def advance(self, n: int = 1) -> None:
        """``n`` units of the current stage are done."""
        ...

    def log(self, line: str) -> None:
        """A line of text for a long step that has no count of its own (a plain string, not markup)."""
        ...


class NullProgress:
    """Reports nowhere: the default when the caller passes no display."""

    def stage(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def log(self, line: str) -> None:
        pass


class Laps:
    """Seconds per named phase of a stage, each phase timed from the end of the one before
    (``laps("runs")`` ends the phase called runs); ``started`` is when the stage began."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self._last = self.started

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._last, 2)
        self._last = now
