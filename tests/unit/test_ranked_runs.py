"""The mutant stage's run slots (``bench.builder.schemata_stage.RankedRuns``): the first-ranked
instance's runs go first, on every free slot; failures and interrupts reach the instance."""

from __future__ import annotations

import threading
import time

import pytest

from bench import stopping
from bench.builder.schemata_stage import RankedRuns


def test_the_first_ranked_instance_runs_first_on_every_slot() -> None:
    runs = RankedRuns(1)
    started: list[str] = []
    gate = threading.Event()

    def run(item: str) -> str:
        if item == "block":
            gate.wait(5)
        started.append(item)
        return item.upper()

    # the one slot is held while rank 1 and then rank 0 queue their runs
    holder = threading.Thread(target=lambda: (runs.rank(5), runs.map(run, ["block"])))
    holder.start()
    time.sleep(0.1)
    later = threading.Thread(target=lambda: (runs.rank(1), runs.map(run, ["b1", "b2"])))
    later.start()
    time.sleep(0.1)
    results: list[list[str]] = []
    first = threading.Thread(target=lambda: (runs.rank(0), results.append(runs.map(run, ["a1", "a2"]))))
    first.start()
    time.sleep(0.1)
    gate.set()
    for thread in (holder, later, first):
        thread.join(5)
    runs.close()
    assert started == ["block", "a1", "a2", "b1", "b2"] and results == [["A1", "A2"]]


def test_one_instance_uses_every_slot() -> None:
    runs = RankedRuns(4)
    busy, most = [0], [0]
    lock = threading.Lock()

    def run(item: int) -> int:
        with lock:
            busy[0] += 1
            most[0] = max(most[0], busy[0])
        time.sleep(0.05)
        with lock:
            busy[0] -= 1
        return item * 2

    assert runs.map(run, list(range(12))) == [i * 2 for i in range(12)]
    runs.close()
    assert most[0] == 4


def test_a_failing_run_and_an_interrupt_reach_the_instance() -> None:
    runs = RankedRuns(2)

    def broken(item: int) -> int:
        raise ValueError(item)

    with pytest.raises(ValueError):
        runs.map(broken, [1, 2])
    started: list[int] = []
    stopping.begin_run()
    try:
        stopping._requested.set()  # an interrupt: no run may start a process any more
        with pytest.raises(KeyboardInterrupt):
            runs.map(started.append, [1, 2, 3])
    finally:
        stopping.begin_run()
        runs.close()
    assert started == []
