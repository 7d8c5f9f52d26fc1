"""How a godog process learns its mutant, and which rows a mutant runs in.

- the selection file reaches the child as fd 3 whatever descriptor it has in the parent — also
  when that descriptor is 3 itself (``pass_fds`` alone left it close-on-exec there: every mutant
  of a build ran as the original when the file happened to open as fd 3) — and nothing else of
  the parent does (a ``preexec_fn`` with ``close_fds`` off leaked pytest's descriptors);
- the child's address space is limited (a mutant that allocates without end);
- a mutant runs only in the rows whose clean run reached one of its lines.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

from bench.frameworks.godog.mutation import rows_covering
from bench.frameworks.godog.schemata import FD, launch, selection
from bench.model import Mutant


def _run(argv: list[str], fd: int | None, memory_limit: int | None = None) -> str:
    command, extra = launch(argv, fd, memory_limit)
    proc = subprocess.run(command, capture_output=True, text=True, check=False, **extra)  # type: ignore[call-overload]
    return proc.stdout


def _read_fd3(fd: int) -> str:
    return _run(["sh", "-c", "cat <&3"], fd)


def test_the_selection_reaches_fd3_from_any_descriptor() -> None:
    with tempfile.TemporaryFile() as chosen:
        chosen.write(selection(17))
        chosen.flush()
        chosen.seek(0)
        assert _read_fd3(chosen.fileno()) == "req2test-mutant 17\n"


def test_the_selection_reaches_fd3_when_it_is_fd3_in_the_parent() -> None:
    saved = os.dup(FD) if _is_open(FD) else None
    try:
        with tempfile.TemporaryFile() as chosen:
            chosen.write(selection(5))
            chosen.flush()
            chosen.seek(0)
            os.dup2(chosen.fileno(), FD, inheritable=False)  # the parent's fd 3, close-on-exec
            try:
                assert _read_fd3(FD) == "req2test-mutant 5\n"
            finally:
                os.close(FD)
    finally:
        if saved is not None:
            os.dup2(saved, FD, inheritable=False)
            os.close(saved)


def test_nothing_else_crosses_exec() -> None:
    """Only 0-2 and the selection cross (``close_fds`` is off; Python opens every descriptor
    close-on-exec). ``ls`` opens one directory descriptor of its own: the highest it lists."""
    with tempfile.TemporaryFile() as chosen, tempfile.TemporaryFile() as other:
        chosen.write(selection(1))
        chosen.flush()
        descriptors = sorted(int(n) for n in _run(["ls", "/proc/self/fd"], chosen.fileno()).split())
        assert descriptors[:-1] == [0, 1, 2, FD], descriptors
        assert other.fileno() not in descriptors[:-1]


def test_the_memory_limit_applies() -> None:
    assert _run(["sh", "-c", "ulimit -v"], None, 1 << 30).strip() == str((1 << 30) // 1024)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _mutant(lines: list[int]) -> Mutant:
    return Mutant(id="m", file="shop/cart.go", line=lines[0], col=0, end_line=lines[-1], end_col=1,
                  operator="negation", original="a", replacement="b", function="F", function_line=1, lines=lines,
                  scope=[1, 20], function_end=20)


def test_a_mutant_runs_only_in_the_rows_that_reach_it() -> None:
    coverage = {21: {"shop/cart.go": {10, 11}}, 22: {"shop/cart.go": {12}}, 23: {"shop/other.go": {11}},
                24: None}
    assert rows_covering(coverage, _mutant([11])) == [21, 24]  # a row without a profile always runs
    assert rows_covering(coverage, _mutant([12, 13])) == [22, 24]
    assert rows_covering({21: {}}, _mutant([11])) == []
