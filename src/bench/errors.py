"""The one base of every error a user's input or environment can cause (a missing file, a bad
experiment, a dataset without its ground truth): commands print its message on one line and
exit 2, never a traceback. A command catches the errors it expects itself; ``harness.cli.main``
catches what escapes it. Kept free of imports: the CLI's entry point imports it at start."""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix, described by its message alone."""
