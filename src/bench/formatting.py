"""Number formatting shared by the comparison and the report (markdown and HTML): one rendering of a value."""

from __future__ import annotations


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def pp(value: float | None) -> str:
    """A difference of two rates, in percentage points."""
    return "—" if value is None else f"{100 * value:+.1f} pp"


def num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"
