"""The docker sandbox against a real engine: each test checks HOW an escape attempt is blocked.

Skipped (with the one-line reason) only when no engine answers and none can be started.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox.base import WORKSPACE, SandboxError, SandboxPolicy
from harness.sandbox.docker_backend import DockerSandbox
from harness.sandbox.dockerd import engine_unavailable_reason, ensure_engine

pytestmark = [pytest.mark.integration, pytest.mark.docker]

PY = sys.executable  # bound read-only at the same absolute path inside


@pytest.fixture(scope="module")
def engine():
    reason = engine_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return ensure_engine()


def _sandbox(engine, tmp_path_factory: pytest.TempPathFactory, **policy: object) -> DockerSandbox:
    workspace = tmp_path_factory.mktemp("ws")
    return DockerSandbox(SandboxPolicy(name="test", backend="docker", **policy), workspace, client=engine)


@pytest.fixture(scope="module")
def sandbox(engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerSandbox]:
    with _sandbox(engine, tmp_path_factory) as box:
        yield box


def test_command_writes_workspace_and_python_runs(sandbox: DockerSandbox) -> None:
    result = sandbox.exec("echo made-inside > out.txt && pwd")
    assert (result.exit_code, result.stdout.strip()) == (0, WORKSPACE)
    assert (sandbox.workspace / "out.txt").read_text() == "made-inside\n"
    result = sandbox.exec([PY, "-c", "import sys; print(sys.version)"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == sys.version


def test_file_api_stays_in_workspace(sandbox: DockerSandbox) -> None:
    sandbox.write_file("features/steps/new_steps.py", "x = 1\n")
    assert sandbox.exec("cat features/steps/new_steps.py && echo more >> features/steps/new_steps.py").exit_code == 0
    assert sandbox.read_file(f"{WORKSPACE}/features/steps/new_steps.py") == "x = 1\nmore\n"
    with pytest.raises(SandboxError, match="outside /workspace"):
        sandbox.read_file("/etc/passwd")
    with pytest.raises(SandboxError, match="escapes the workspace"):
        sandbox.read_file("../../etc/passwd")
    assert sandbox.exec("ln -sf /etc/passwd planted").exit_code == 0  # an agent's symlink, followed on the host
    with pytest.raises(SandboxError, match="escapes the workspace"):
        sandbox.read_file("planted")


CONNECT = """
import errno, socket, sys
for host, port in [("127.0.0.1", int(sys.argv[1])), ("10.0.0.1", 80), ("8.8.8.8", 53)]:
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, port))
        print(host, "CONNECTED")
    except OSError as exc:
        print(host, errno.errorcode.get(exc.errno, exc))
"""


def test_no_network(sandbox: DockerSandbox) -> None:
    with socket.socket() as server:  # a host service the sandbox must not reach
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        result = sandbox.exec([PY, "-c", CONNECT, str(port)], timeout=20)
    assert result.exit_code == 0, result.stderr
    # loopback is the container's own (nothing listens); there is no route anywhere else
    assert result.stdout.split("\n")[:3] == ["127.0.0.1 ECONNREFUSED", "10.0.0.1 ENETUNREACH", "8.8.8.8 ENETUNREACH"]
    assert sandbox.exec("ls /sys/class/net").stdout.split() == ["lo"]


def test_docker_socket_absent(sandbox: DockerSandbox) -> None:
    result = sandbox.exec("ls -l /var/run/docker.sock /run/docker.sock")
    assert result.exit_code != 0
    assert "/var/run/docker.sock': No such file or directory" in result.stderr
    assert "/run/docker.sock': No such file or directory" in result.stderr


def test_read_only_system_and_unprivileged(sandbox: DockerSandbox) -> None:
    for target in ("/usr/x", "/etc/x", f"{Path(PY).parent}/x", "/x"):
        result = sandbox.exec(["/usr/bin/touch", target])
        assert result.exit_code == 1, target
        assert "Read-only file system" in result.stderr, result.stderr
    assert sandbox.exec("touch /workspace/ok /tmp/ok").exit_code == 0
    assert sandbox.exec("id -u; id -g").stdout.split() == ["65534", "65534"]
    assert "CapEff:\t0000000000000000" in sandbox.exec("cat /proc/self/status").stdout


def test_etc_is_the_minimal_one(sandbox: DockerSandbox) -> None:
    """The same /etc as bubblewrap (bench.minimal_etc): no shadow, no machine-id, no host users;
    the sandbox's user still resolves."""
    hidden = ["/etc/shadow", "/etc/gshadow", "/etc/machine-id", "/etc/gitconfig", "/etc/ssl/private", "/etc/sudoers"]
    probe = sandbox.exec(["/bin/sh", "-c", "for f in " + " ".join(hidden) + "; do ls -d $f; done"])
    assert probe.stderr.count("No such file or directory") == len(hidden), probe.stderr
    users = sandbox.exec(["cat", "/etc/passwd"]).stdout
    assert [line.split(":")[0] for line in users.splitlines()] == ["root", "nobody"]
    who = sandbox.exec([PY, "-c", ("import getpass, os, pwd; "
                                   "print(getpass.getuser(), pwd.getpwuid(os.getuid()).pw_name)")])
    assert who.stdout.split() == ["nobody", "nobody"], who


def test_unbound_host_paths_invisible(sandbox: DockerSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "gold.json").write_text("{}")
    home_cache = Path.home() / ".cache"
    for path in (secret, secret / "gold.json", home_cache, Path(__file__).resolve().parents[2]):
        result = sandbox.exec(["ls", str(path)])
        assert result.exit_code == 2, path
        assert "No such file or directory" in result.stderr


def test_egress_socket_is_the_only_channel(engine, tmp_path_factory: pytest.TempPathFactory) -> None:
    sock_dir = tmp_path_factory.mktemp("egress")
    path = sock_dir / "egress.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    os.chmod(sock_dir, 0o755)  # uid 65534 must reach and connect to the socket
    os.chmod(path, 0o777)

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(b"proxy saw " + conn.recv(100))

    threading.Thread(target=echo, daemon=True).start()
    box = DockerSandbox(SandboxPolicy(name="egress", backend="docker"), tmp_path_factory.mktemp("ws"),
                        proxy_socket=path, client=engine)
    with box:
        script = ("import os, socket; s = socket.socket(socket.AF_UNIX); "
                  "s.connect(os.environ['REQ2TEST_EGRESS_SOCKET']); s.sendall(b'hello'); print(s.recv(100).decode())")
        result = box.exec([PY, "-c", script], timeout=20)
    server.close()
    assert (result.exit_code, result.stdout.strip()) == (0, "proxy saw hello"), result.stderr


def test_timeout_kills_command(sandbox: DockerSandbox) -> None:
    started = time.monotonic()
    result = sandbox.exec("sleep 30", timeout=2)
    assert result.timed_out and result.exit_code == 137
    assert time.monotonic() - started < 10
    assert sandbox.exec("echo still here").stdout == "still here\n"


def test_leftover_processes_are_killed(sandbox: DockerSandbox) -> None:
    assert sandbox.exec("sleep 300 > /dev/null 2>&1 &").exit_code == 0
    running = sandbox.exec("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done").stdout
    assert "signal.pause()" in running  # PID 1, the reaper, is there; the sleep died with its command
    assert "sleep 300" not in running


def test_wall_clock_refuses_when_spent(engine, tmp_path_factory: pytest.TempPathFactory) -> None:
    with _sandbox(engine, tmp_path_factory, wall_clock_seconds=3) as box:
        result = box.exec("sleep 10")
        assert result.timed_out and result.seconds < 6
        refused = box.exec("echo never")
        assert refused.refused == "wall clock of 3 s spent" and refused.exit_code is None
        report = box.close()
    assert report.backend == "docker" and report.isolated and report.used_seconds >= 3


FORK_COUNT = """
import os, time
n = 0
while True:
    try:
        pid = os.fork()
    except OSError as exc:
        print(n, exc.strerror, flush=True)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
"""


def test_pids_limit_stops_fork_bomb(engine, tmp_path_factory: pytest.TempPathFactory) -> None:
    with _sandbox(engine, tmp_path_factory, pids_limit=64) as box:
        result = box.exec([PY, "-c", FORK_COUNT], timeout=20)
        forked, error = result.stdout.split(" ", 1)
        assert 0 < int(forked) < 64 and error.strip() == "Resource temporarily unavailable", result
        started = time.monotonic()
        bomb = box.exec([PY, "-c", "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass"], timeout=5)
        assert bomb.timed_out and time.monotonic() - started < 15
        after = box.exec("echo usable")  # every fork is gone (killed inside, or the container restarted)
        assert (after.exit_code, after.stdout) == (0, "usable\n"), after


def test_provider_only_egress_through_the_proxy(engine, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same allowlist as bwrap: the provider answers through the proxy, the rest is refused and logged."""
    import http.server

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args: object) -> None:
            pass

    servers = [http.server.ThreadingHTTPServer(("0.0.0.0", 0), Hello) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    provider, other = (s.server_address[1] for s in servers)
    try:
        box = _sandbox(engine, tmp_path_factory, egress_allow=[f"127.0.0.1:{provider}"])
        box.start()
        fetch = "import urllib.request as u, sys; r = u.urlopen(sys.argv[1], timeout=10); print(r.status, r.read())"
        ok = box.exec([sys.executable, "-c", fetch, f"http://127.0.0.1:{provider}/v1"])
        assert ok.exit_code == 0 and "200 b'hello'" in ok.stdout, ok
        refused = box.exec([sys.executable, "-c", fetch, f"http://127.0.0.1:{other}/"])
        assert refused.exit_code != 0 and "403" in refused.stderr, refused
        report = box.close()
    finally:
        for server in servers:
            server.shutdown()
    assert [(r.target, r.allowed) for r in report.egress] == [(f"127.0.0.1:{provider}", True),
                                                              (f"127.0.0.1:{other}", False)]
