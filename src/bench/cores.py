"""How many cores a worker count means: one rule for the CLI, experiment files and the judges
(``--workers 0``, ``workers: 0`` in a file and a default all mean one per core)."""

from __future__ import annotations

import os


def cores() -> int:
    """This machine's cores (at least 1)."""
    return max(1, os.cpu_count() or 1)


def per_core(workers: int) -> int:
    """A worker count as given (``--workers N``, ``workers: N``): 0 is one per core."""
    return workers if workers > 0 else cores()


__all__ = ["cores", "per_core"]
