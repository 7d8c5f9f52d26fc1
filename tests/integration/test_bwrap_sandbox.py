"""Escape attempts from inside the bwrap sandbox; each is blocked, and the test says how."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.frameworks.registry import get_framework
from bench.isolation import bwrap_path, wrap
from harness.runtime import Runtime
from harness.sandbox.base import SandboxPolicy
from harness.sandbox.bwrap_backend import BwrapSandbox
from harness.sandbox.workspace import Workspace

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")]


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from the provider"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def servers():
    """Two loopback HTTP servers on the host: the 'provider' and something else."""
    started = []
    for _ in range(2):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
    yield [s.server_address[1] for s in started]
    for server in started:
        server.shutdown()


def _host_runtime() -> Runtime:
    prefix = Path(sys.prefix).resolve()
    return Runtime(python=Path(sys.executable), venv=prefix, base_prefix=Path(sys.base_prefix).resolve(),
                   base_site_packages=[], packages=[])


def _sandbox(tmp_path: Path, **policy: object) -> BwrapSandbox:
    view = tmp_path / "view"
    (view / "features").mkdir(parents=True)
    (view / "README").write_text("view\n")
    workspace = Workspace.create(view, tmp_path / "ws", tmp_path / "history.git", "features", get_framework("behave").test_area(view, "features"))
    return BwrapSandbox(SandboxPolicy(name="test", **policy), workspace, _host_runtime())


def _py(sandbox: BwrapSandbox, code: str, timeout: float = 30):
    return sandbox.exec([sys.executable, "-c", code], timeout=timeout)


def test_network_reaches_only_the_provider_through_the_proxy(tmp_path: Path, servers: list[int]) -> None:
    provider, other = servers
    with _sandbox(tmp_path, egress_allow=[f"127.0.0.1:{provider}"]) as sandbox:
        fetch = "import urllib.request as u, sys; r = u.urlopen(sys.argv[1], timeout=10); print(r.status, r.read())"
        ok = sandbox.exec([sys.executable, "-c", fetch, f"http://127.0.0.1:{provider}/v1/models"])
        assert ok.exit_code == 0 and "200" in ok.stdout and "hello from the provider" in ok.stdout, ok
        # another loopback port through the proxy: refused by the allowlist (403), and logged
        refused = sandbox.exec([sys.executable, "-c", fetch, f"http://127.0.0.1:{other}/"])
        assert refused.exit_code != 0 and "403" in refused.stderr, refused
        # straight to the host's loopback port, bypassing the proxy: the sandbox has its own,
        # empty network namespace, so nothing listens there
        direct = _py(sandbox, f"import socket; socket.create_connection(('127.0.0.1', {other}), timeout=5)")
        assert direct.exit_code != 0 and "ConnectionRefusedError" in direct.stderr, direct
        # an outside address: no route at all
        outside = _py(sandbox, "import socket; socket.create_connection(('8.8.8.8', 53), timeout=5)")
        assert outside.exit_code != 0 and "Network is unreachable" in outside.stderr, outside
        report = sandbox.close()
    assert report.egress_allow == [f"127.0.0.1:{provider}"]
    allowed = [r for r in report.egress if r.allowed]
    denied = [r for r in report.egress if not r.allowed]
    assert [r.target for r in allowed] == [f"127.0.0.1:{provider}"]
    assert [r.target for r in denied] == [f"127.0.0.1:{other}"]


def test_host_files_are_out_of_reach_and_read_only(tmp_path: Path) -> None:
    gold = tmp_path / "dataset" / "gold"
    gold.mkdir(parents=True)
    (gold / "project.jsonl").write_text("secret\n")
    source = tmp_path / "project" / "src"
    source.mkdir(parents=True)
    (source / "impl.py").write_text("SECRET = 1\n")
    with _sandbox(tmp_path) as sandbox:
        probe = sandbox.exec(["/bin/sh", "-c", f"ls {gold}; ls {source}; ls -l /var/run/docker.sock /run/docker.sock"])
        assert probe.exit_code != 0
        assert probe.stderr.count("No such file or directory") == 4, probe.stderr
        for target in ["/usr/evil", "/etc/evil", f"{sys.base_prefix}/evil"]:
            write = _py(sandbox, f"open({target!r}, 'w').write('x')")
            assert write.exit_code != 0 and "Read-only file system" in write.stderr, (target, write)
        who = sandbox.exec(["/bin/sh", "-c", "id -u; touch /workspace/made-here && echo wrote"])
        assert who.stdout.split() == ["65534", "wrote"]
    assert (tmp_path / "ws" / "made-here").is_file()
    assert not Path("/usr/evil").exists() and not Path("/etc/evil").exists()


def test_nothing_outlives_its_command_or_the_wall_clock(tmp_path: Path) -> None:
    with _sandbox(tmp_path, wall_clock_seconds=6) as sandbox:
        # a background process left behind dies with the command's namespace
        quick = sandbox.exec(["/bin/sh", "-c", "(sleep 1; touch /workspace/late) >/dev/null 2>&1 &"])
        assert quick.exit_code == 0
        # a command past its limit is killed, with everything it started
        started = time.monotonic()
        slow = sandbox.exec(["/bin/sh", "-c", "(sleep 2; touch /workspace/later) & sleep 60"], timeout=1)
        assert slow.timed_out and slow.exit_code is None and time.monotonic() - started < 5
        time.sleep(2.5)
        assert not (tmp_path / "ws" / "late").exists() and not (tmp_path / "ws" / "later").exists()
        # the sandbox's wall clock bounds everything: the rest of it, then refusals
        spent = sandbox.exec(["/bin/sh", "-c", "sleep 60"])
        assert spent.timed_out
        refused = sandbox.exec(["/bin/true"])
        assert refused.refused and "wall clock of 6 s spent" in refused.refused


def test_fork_bomb_is_capped(tmp_path: Path) -> None:
    bomb = ("import os, time\n"
            "made = 0\n"
            "while True:\n"
            "    try:\n"
            "        pid = os.fork()\n"
            "    except OSError as exc:\n"
            "        print('refused after', made, exc.strerror, flush=True); break\n"
            "    if pid == 0:\n"
            "        time.sleep(30); os._exit(0)\n"
            "    made += 1\n")
    with _sandbox(tmp_path, pids_limit=40) as sandbox:
        if sandbox.cgroup is None or not sandbox.cgroup.limited("pids"):
            pytest.skip(sandbox.cgroup.reasons.get("pids", "") if sandbox.cgroup else "no pids limit")
        started = time.monotonic()
        result = _py(sandbox, bomb, timeout=20)
        assert "refused after" in result.stdout, result
        made = int(result.stdout.split("refused after")[1].split()[0])
        assert made < 40 and "Resource temporarily unavailable" in result.stdout
        assert time.monotonic() - started < 20
        assert sandbox.cgroup.peak_refused() >= 1
        # the sandbox is still usable afterwards
        assert sandbox.exec(["/bin/true"]).exit_code == 0


# host files that must not be visible inside: each identifies the host or is a secret, and the
# sandbox's uid maps to host root, so a bound root-only file would be readable
HOST_ONLY = ["/etc/shadow", "/etc/gshadow", "/etc/hostname", "/etc/machine-id", "/etc/gitconfig", "/etc/ssl/private",
             "/etc/sudoers", "/etc/pip.conf", "/etc/npmrc"]
WHO = ("import getpass, os, pwd; "
       "print(getpass.getuser(), pwd.getpwuid(os.getuid()).pw_name, pwd.getpwnam('root').pw_uid)")


def test_etc_is_minimal_and_tools_still_run(tmp_path: Path) -> None:
    with _sandbox(tmp_path) as sandbox:
        probe = sandbox.exec(["/bin/sh", "-c", "for f in " + " ".join(HOST_ONLY) + "; do ls -d $f; done"])
        assert probe.stderr.count("No such file or directory") == len(HOST_ONLY), probe.stderr
        users = sandbox.exec(["/bin/cat", "/etc/passwd", "/etc/group"]).stdout
        assert [line.split(":")[0] for line in users.splitlines()] == ["root", "nobody", "root", "nogroup"]
        # the sandbox's own user still resolves, and /etc cannot be written
        who = _py(sandbox, WHO)
        assert who.stdout.split() == ["nobody", "nobody", "0"], who
        write = sandbox.exec(["/bin/sh", "-c", "echo x > /etc/ld.so.preload"])
        assert write.exit_code != 0 and "Read-only file system" in write.stderr
        # interpreters and tools start: the runtime's python, the system's, git, node
        system_python = sandbox.exec(["/usr/bin/python3", "-c", WHO])
        assert system_python.exit_code == 0 and system_python.stdout.split()[0] == "nobody", system_python
        # git derives its ident from passwd + hosts; awk is a Debian alternative (/etc/alternatives)
        tools = sandbox.exec(["/bin/sh", "-c", ("cd /tmp && git init -q r && cd r && git commit -q --allow-empty -m m "
                                                "&& git log --format=%ae && awk 'BEGIN { print 42 }'")])
        assert tools.exit_code == 0, tools.stderr
        assert tools.stdout.split() == ["nobody@sandbox.localdomain", "42"]
        if shutil.which("node"):
            node = sandbox.exec(["node", "-e", ("const os = require('os'); console.log(os.userInfo().username, "
                                                "require('tls').rootCertificates.length > 0)")])
            assert node.exit_code == 0 and node.stdout.split() == ["nobody", "true"], node
        # CA certificates for TLS to the provider through the proxy
        ca = _py(sandbox, "import ssl; print(ssl.create_default_context().cert_store_stats()['x509_ca'] > 0)")
        assert ca.stdout.strip() == "True", ca


def test_evaluator_sandbox_has_the_minimal_etc_too(tmp_path: Path) -> None:
    """``bench.isolation.wrap`` (the evaluator's recipe) binds the same minimal /etc."""
    probe = f"import os; print(*[os.path.exists(p) for p in {HOST_ONLY!r}])\n{WHO}"
    command = wrap([sys.executable, "-c", probe], writable=[tmp_path], readonly=[], cwd=tmp_path)
    assert "/etc" not in [command[i + 1] for i, arg in enumerate(command) if arg.startswith("--ro-bind")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["False"] * len(HOST_ONLY)
    assert lines[1].split() == ["nobody", "nobody", "0"]


HOG = "import sys; data = b'x' * (int(sys.argv[1]) << 20); print('allocated', len(data) >> 20)"


def test_memory_limit_kills_a_hog_and_the_report_says_so(tmp_path: Path) -> None:
    with _sandbox(tmp_path, memory_mb=200) as sandbox:
        if sandbox.cgroup is None or not sandbox.cgroup.limited("memory"):
            pytest.skip(sandbox.cgroup.reasons.get("memory", "") if sandbox.cgroup else "no cgroup")
        fine = sandbox.exec([sys.executable, "-c", HOG, "50"], timeout=60)
        assert fine.exit_code == 0 and fine.stdout.strip() == "allocated 50" and not fine.oom_killed, fine
        hog = sandbox.exec([sys.executable, "-c", HOG, "1024"], timeout=60)
        # malloc does not fail under a cgroup limit: the kernel's OOM killer sends SIGKILL (bwrap: 137)
        assert hog.exit_code == 137 and "allocated" not in hog.stdout and hog.oom_killed, hog
        assert sandbox.exec(["/bin/true"]).exit_code == 0  # still usable afterwards
        report = sandbox.close()
    assert report.oom_kills == 1
    assert any(note.startswith("out of memory:") and "200 MiB" in note for note in report.notes), report.notes


def test_links_an_agent_plants_are_not_collected(tmp_path: Path) -> None:
    """End to end: inside, the agent links its 'test' to host paths (which do not even exist in
    the sandbox); the diff on the host side must not follow them."""
    with _sandbox(tmp_path) as sandbox:
        plant = sandbox.exec(["/bin/sh", "-c", ("mkdir -p features/steps && cd features/steps "
                                                "&& ln -s /etc/shadow shadow_steps.py && ln -s / root "
                                                "&& mkfifo pipe_steps.py && echo 'x = 1' > real_steps.py")])
        assert plant.exit_code == 0, plant.stderr
        diff = sandbox.diff()
    assert diff.test_files == {"features/steps/real_steps.py": "x = 1\n"}
    assert diff.discarded == {
        "features/steps/shadow_steps.py": "symbolic link: not collected (links are never followed)",
        "features/steps/root": "symbolic link: not collected (links are never followed)",
        "features/steps/pipe_steps.py": "not a regular file (fifo): not collected"}
