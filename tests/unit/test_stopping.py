"""bench.stopping: an interrupted pool runs nothing queued and leaves no process of its run behind.

The interrupt happens in a child Python (a real SIGINT to itself): ``stop()`` kills every descendant
of the process that calls it, which in pytest's own process would include other tests' servers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SCRIPT = textwrap.dedent('''
    import json, os, signal, subprocess, sys, threading, time
    from pathlib import Path
    from bench import stopping

    started, finished, orphan_file = [], [], Path(sys.argv[1])
    ready = threading.Event()
    # started before the run (a notebook's own server, a test's fixture): not the run's to kill
    before = subprocess.Popen(["sleep", "60"], start_new_session=True)
    time.sleep(0.2)
    stopping.begin_run()

    def work(i):
        started.append(i)
        # like a sandbox: a session of its own (the terminal's SIGINT never reaches it), holding an
        # orphan in that session that is no longer our descendant
        proc = subprocess.Popen(["sh", "-c", f"(sleep 60 & echo $! > {orphan_file}); exec sleep 60"],
                                start_new_session=True)
        ready.set()
        proc.wait()
        if stopping.requested():
            # a thread slow to unwind (a loaded machine): the pool kills again while it waits, and
            # must still spare what this process had started before the run
            time.sleep(0.6)
            return  # cut short: recorded nowhere
        finished.append(i)

    try:
        with stopping.StoppablePool(max_workers=1) as pool:
            futures = [pool.submit(work, i) for i in range(5)]
            ready.wait(30)
            while not orphan_file.is_file() or not orphan_file.read_text().strip():
                time.sleep(0.01)
            signal.raise_signal(signal.SIGINT)
            for future in futures:
                future.result()
    except KeyboardInterrupt:
        print(json.dumps({"started": started, "finished": finished, "requested": stopping.requested(),
                          "earlier_process_spared": before.poll() is None}))
        before.kill()
''')


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def test_an_interrupted_pool_runs_nothing_queued_and_kills_its_sessions(tmp_path: Path) -> None:
    orphan_file = tmp_path / "orphan.pid"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(orphan_file)], check=False, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - started < 30  # not the 60 s of the sleeps
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"started": [0], "finished": [], "requested": True, "earlier_process_spared": True}
    orphan = int(orphan_file.read_text())
    for _ in range(50):
        if not _alive(orphan):
            break
        time.sleep(0.1)
    assert not _alive(orphan)


FORKER = textwrap.dedent('''
    import subprocess, sys, time
    from bench.stopping import kill_descendants
    # a shell that forks, as fast as it can, children that leave its session at once (as bubblewrap
    # does): killed while scanning, the children forked between a scan and the kill escaped as orphans
    subprocess.Popen(["bash", "-c", "while true; do setsid sleep " + sys.argv[1] + " & done"])
    time.sleep(0.5)
    kill_descendants()
''')


def test_children_forked_while_killing_do_not_escape() -> None:
    marker = f"301.{os.getpid()}{time.monotonic_ns() % 100000}"  # a sleep length no other process has
    done = subprocess.run([sys.executable, "-c", FORKER, marker], check=False, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], check=False, capture_output=True, text=True).stdout.split()
    for pid in left:  # never leave them behind, even when the test fails
        subprocess.run(["kill", "-9", pid], check=False)
    assert left == []
