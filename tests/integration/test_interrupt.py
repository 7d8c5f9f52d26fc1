"""Ctrl-C and SIGTERM stop ``req2test evaluate`` promptly (issue 30, item 3).

A real signal goes to the process group of a real ``req2test evaluate`` (started in a session of its
own, as a terminal's job is) while it is judging: the command must exit 130 within seconds, leave no
process of its session behind (sandboxes run in sessions of their own, so the signal never reaches
them: the command kills them), keep every finished result and record nothing for the instance it was
judging; the same command then judges the rest, ending with what an uninterrupted run gives.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.calibrate import calibration_predictions
from bench.evaluate import EvaluateOptions, evaluate

pytestmark = pytest.mark.integration

# four quick instances: after the first result the run is still judging for several seconds
INSTANCES = [f"tinyshop/features/cart.feature:{line}" for line in (13, 19, 27, 57)]
STOP_BOUND = 15.0  # seconds; a correctness bound (it used to judge every queued instance first), not a benchmark


def _predictions(dataset: Path, path: Path) -> Path:
    oracle = calibration_predictions(dataset)["oracle"]
    path.write_text("".join(p.model_dump_json() + "\n" for p in oracle), encoding="utf-8")
    return path


def _command(dataset: Path, predictions: Path, run_dir: Path) -> list[str]:
    command = [sys.executable, "-m", "harness.cli", "evaluate", str(dataset), "-p", str(predictions),
               "-o", str(run_dir), "--workers", "1", "-q"]
    for instance in INSTANCES:
        command += ["-i", instance]
    return command


def _session_processes(sid: int) -> list[str]:
    """The live processes of session ``sid`` (zombies are dead: only their parent's reaping is left)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_bytes()
            command = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[3]) == sid and fields[0] not in (b"Z", b"X"):
            found.append(f"{entry.name}: {command}")
    return found


def _interrupt_while_judging(command: list[str], journal: Path, log: Path, sig: signal.Signals
                             ) -> tuple[subprocess.Popen[bytes], float, list[str]]:
    """Start ``command``, send ``sig`` to its process group once its first result is journaled; the
    process, the seconds it took to exit, and the journal's lines right after the signal.

    On a loaded machine this poller can be descheduled long enough that the run has judged every
    instance by the time it looks (CI saw that once): such a run proves nothing about
    interruption, so it is made again from scratch (up to 3 times)."""
    for _attempt in range(3):
        shutil.rmtree(journal.parent, ignore_errors=True)
        with open(log, "wb") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=out, start_new_session=True)
        deadline = time.monotonic() + 300
        while not (journal.is_file() and journal.read_text(encoding="utf-8").count("\n") >= 1):
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "no result within 300 s"
            time.sleep(0.05)
        before = journal.read_text(encoding="utf-8").splitlines()
        if len(before) >= len(INSTANCES):  # it finished before it could be interrupted
            proc.wait(timeout=120)
            continue
        os.killpg(proc.pid, sig)  # what a terminal's Ctrl-C does: the whole foreground group
        sent = time.monotonic()
        before = journal.read_text(encoding="utf-8").splitlines()
        try:
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        return proc, time.monotonic() - sent, before
    raise AssertionError("three runs judged every instance before the first result could be seen")


def _no_process_left(sid: int) -> None:
    left = _session_processes(sid)
    for _ in range(20):  # a process SIGKILLed a moment ago may take a few ms to go
        if not left:
            break
        time.sleep(0.1)
        left = _session_processes(sid)
    assert not left, left


def test_ctrl_c_stops_at_once_keeps_what_finished_and_resumes(example_dataset: Path, tmp_path: Path) -> None:
    predictions = _predictions(example_dataset, tmp_path / "oracle.jsonl")
    run_dir = tmp_path / "run"
    journal = run_dir / "results.jsonl"
    command = _command(example_dataset, predictions, run_dir)
    proc, seconds, before = _interrupt_while_judging(command, journal, tmp_path / "first.log", signal.SIGINT)
    output = (tmp_path / "first.log").read_text()
    assert proc.returncode == 130, output[-2000:]
    assert seconds < STOP_BOUND, f"took {seconds:.1f} s to stop"
    _no_process_left(proc.pid)
    kept = journal.read_text(encoding="utf-8").splitlines()
    assert kept[:len(before)] == before  # finished results are kept verbatim
    assert 1 <= len(kept) < len(INSTANCES)  # the instance being judged was not recorded, the queue not run
    message = re.search(r"interrupted: (\d+) of (\d+) instances judged; run the same command again to resume",
                        output)
    assert message is not None, output[-2000:]
    assert (int(message[1]), int(message[2])) == (len(kept), len(INSTANCES))

    resumed = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    lines = journal.read_text(encoding="utf-8").splitlines()
    assert lines[:len(kept)] == kept  # nothing judged twice, nothing rewritten
    results = {r["instance_id"]: r for r in map(json.loads, lines)}
    assert len(lines) == len(results) == len(INSTANCES)

    uninterrupted = tmp_path / "uninterrupted"
    evaluate(example_dataset, predictions, uninterrupted, EvaluateOptions(workers=1, instances=INSTANCES,
                                                                           resamples=100))
    reference = {r["instance_id"]: r for r in map(json.loads, (uninterrupted / "results.jsonl").read_text(
        encoding="utf-8").splitlines())}
    assert {i: (r["outcome"], r["kill_complete"]) for i, r in results.items()} == \
        {i: (r["outcome"], r["kill_complete"]) for i, r in reference.items()}


def test_sigterm_stops_like_ctrl_c(example_dataset: Path, tmp_path: Path) -> None:
    """``kill``, ``timeout`` and a CI cancellation send SIGTERM: its default would end Python at once
    and leave the sandboxes (sessions of their own) running."""
    predictions = _predictions(example_dataset, tmp_path / "oracle.jsonl")
    run_dir = tmp_path / "run"
    command = _command(example_dataset, predictions, run_dir)
    proc, seconds, _ = _interrupt_while_judging(command, run_dir / "results.jsonl", tmp_path / "log",
                                                signal.SIGTERM)
    assert proc.returncode == 130, (tmp_path / "log").read_text()[-2000:]
    assert seconds < STOP_BOUND, f"took {seconds:.1f} s to stop"
    _no_process_left(proc.pid)
    assert "run the same command again to resume" in (tmp_path / "log").read_text()
