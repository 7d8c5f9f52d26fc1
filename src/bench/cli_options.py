"""The options several commands share, spelled and explained one way (issue 30): ``--workers``,
``-q/--quiet``, ``--json`` and the old spellings a renamed option still accepts.

A command declares them through these functions so the bounds and the help read the same on every
command (tests/unit/test_cli_consistency.py walks the commands and checks it).
"""

from __future__ import annotations

from typing import Any, TypeVar

import typer

from bench.console import console

T = TypeVar("T")

WORKERS_RULE = "N ≥ 1, or 0 = one per core"
QUIET_HELP = "Results only: no progress or notes on stderr (errors and warnings still are)."


def workers_option(what: str, default: str = "") -> Any:
    """``--workers N``: ``what`` N at a time; ``default`` says what leaving it out means, when not 0."""
    return typer.Option("--workers", min=0, metavar="N",
                        help=f"{what}: {WORKERS_RULE}" + (f" (default: {default})" if default else "") + ".")


def quiet_option() -> Any:
    return typer.Option("--quiet", "-q", help=QUIET_HELP)


def json_option(what: str) -> Any:
    """``--json``: ``what`` as JSON on stdout (nothing else goes there)."""
    return typer.Option("--json", help=f"Print {what} as JSON on stdout instead of tables.")


def old_spelling(old: str, new: str) -> Any:
    """A renamed option's old flag: hidden from --help, still accepted (``renamed`` says so when it is used)."""
    return typer.Option(old, hidden=True, help=f"Deprecated: use {new}.")


def renamed(value: T | None, old_value: T | None, old: str, new: str) -> T | None:
    """The option's value, taking the old spelling's when only that was given (with a one-line note on stderr)."""
    if old_value is None:
        return value
    if value is not None and value != old_value:
        from bench.cli import fail  # bench.cli imports this module: only when it is needed

        raise fail(f"{old} is the old spelling of {new}: give one of them")
    console.print(f"note: {old} is deprecated here, use {new}", highlight=False, soft_wrap=True, markup=False)
    return old_value
