"""Provider-only egress, end to end on real sockets.

client → forwarder subprocess (127.0.0.1:PORT) → unix socket → EgressProxy → loopback "provider".
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.sandbox.egress import (
    FORWARDER_PATH,
    EgressProxy,
    forwarder_command,
    parse_hostport,
    proxy_env,
    wrap_command,
)


class _Provider(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._answer(f"hello from {self.server.server_address[1]} {self.path}".encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        # Echo what the origin saw, so the test can check the proxy's rewriting.
        headers = self.headers
        seen = f"{self.requestline}|conn={headers.get('Connection')}|proxy={headers.get('Proxy-Authorization')}"
        self._answer(seen.encode() + b"|" + body)

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _server() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server


def _wait_ready(path: Path, proc: subprocess.Popen[bytes], timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        assert proc.poll() is None, f"forwarder exited: {proc.stderr.read() if proc.stderr else ''}"
        time.sleep(0.02)
    raise AssertionError("forwarder did not become ready")


@dataclass
class Rig:
    proxy: EgressProxy
    allowed_port: int
    other_port: int
    forwarder_port: int
    tmp: Path

    def opener(self) -> urllib.request.OpenerDirector:
        url = f"http://127.0.0.1:{self.forwarder_port}"
        return urllib.request.build_opener(urllib.request.ProxyHandler({"http": url, "https": url}))

    def raw(self, data: bytes, half_close: bool = False) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.forwarder_port), timeout=5)
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return sock


def _read_head(sock: socket.socket) -> bytes:
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(4096)
        if not data:
            break
        buf += data
    return buf


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while data := sock.recv(65536):
        chunks.append(data)
    return b"".join(chunks)


@pytest.fixture()
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    # urllib honours no_proxy even with an explicit ProxyHandler: make sure nothing bypasses.
    monkeypatch.setenv("no_proxy", "")
    monkeypatch.delenv("NO_PROXY", raising=False)
    allowed, other = _server(), _server()
    proxy = EgressProxy(allow=[f"127.0.0.1:{allowed.server_address[1]}"], socket_path=tmp_path / "egress.sock")
    proxy.start()
    ready = tmp_path / "forwarder.ready"
    cmd = forwarder_command(sys.executable, str(proxy.socket_path), 0, str(ready))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port = _wait_ready(ready, proc)
        yield Rig(proxy, allowed.server_address[1], other.server_address[1], port, tmp_path)
    finally:
        proc.kill()
        proc.wait(timeout=5)
        if proc.stderr:
            proc.stderr.close()
        proxy.stop()
        for server in (allowed, other):
            server.shutdown()
            server.server_close()
    # stop() cuts open connections, so no handler thread outlives the proxy.
    deadline = time.monotonic() + 2
    while any(t.name.startswith("egress") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("egress")]


def test_allowed_get_and_post_through_forwarder(rig: Rig) -> None:
    url = f"http://127.0.0.1:{rig.allowed_port}/v1/models?x=1"
    with rig.opener().open(url, timeout=5) as response:
        assert response.status == 200
        assert response.read() == f"hello from {rig.allowed_port} /v1/models?x=1".encode()

    request = urllib.request.Request(f"http://127.0.0.1:{rig.allowed_port}/v1/chat", data=b"x" * 200_000,
                                     headers={"Proxy-Authorization": "Basic c2VjcmV0", "Connection": "keep-alive"})
    with rig.opener().open(request, timeout=5) as response:
        line, conn, auth, body = response.read().split(b"|")
    # Origin-form on the wire, Connection forced to close, Proxy-* never reaches the origin, body intact.
    assert (line, conn, auth) == (b"POST /v1/chat HTTP/1.1", b"conn=close", b"proxy=None")
    assert body == b"x" * 200_000

    records = rig.proxy.records()
    assert [(r.target, r.method, r.allowed) for r in records] == [
        (f"127.0.0.1:{rig.allowed_port}", "GET", True), (f"127.0.0.1:{rig.allowed_port}", "POST", True)]


def test_get_to_unlisted_port_is_refused(rig: Rig) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        rig.opener().open(f"http://127.0.0.1:{rig.other_port}/", timeout=5)
    assert err.value.code == 403
    assert f"127.0.0.1:{rig.other_port}" in err.value.read().decode()
    err.value.close()
    [record] = rig.proxy.records()
    assert (record.target, record.method, record.allowed) == (f"127.0.0.1:{rig.other_port}", "GET", False)
    assert "not allowed" in record.reason


def test_connect_tunnel_to_allowed_target(rig: Rig) -> None:
    target = f"127.0.0.1:{rig.allowed_port}"
    with rig.raw(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()) as sock:
        assert _read_head(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(f"GET /through HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n".encode())
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(f"hello from {rig.allowed_port} /through".encode())
    [record] = rig.proxy.records()
    assert (record.target, record.method, record.allowed) == (target, "CONNECT", True)


def test_connect_elsewhere_is_refused_without_lookup(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    # The proxy runs in this process: spy on name resolution and outgoing connects (still real calls).
    looked_up: list[object] = []
    real_getaddrinfo, real_create = socket.getaddrinfo, socket.create_connection
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: looked_up.append(host) or real_getaddrinfo(
        host, *a, **k))
    monkeypatch.setattr(socket, "create_connection", lambda address, *a, **k: looked_up.append(address) or real_create(
        address, *a, **k))
    started = time.monotonic()
    with rig.raw(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n") as sock:
        answer = _read_all(sock)
    assert time.monotonic() - started < 1.0
    assert answer.startswith(b"HTTP/1.1 403") and b"example.com:443" in answer
    assert not [x for x in looked_up if "example.com" in str(x)]
    [record] = rig.proxy.records()
    assert (record.target, record.method, record.allowed) == ("example.com:443", "CONNECT", False)
    assert "not allowed" in record.reason


def test_host_match_is_literal_and_case_insensitive(rig: Rig) -> None:
    # "localhost" is not "127.0.0.1": no resolution, so no aliasing.
    with rig.raw(f"CONNECT localhost:{rig.allowed_port} HTTP/1.1\r\n\r\n".encode()) as sock:
        assert _read_all(sock).startswith(b"HTTP/1.1 403")
    proxy = EgressProxy(["API.Example.COM.:443"])
    assert proxy.is_allowed("api.example.com", 443) and not proxy.is_allowed("api.example.com", 80)


@pytest.mark.parametrize("garbage", [b"\x16\x03\x01\x02\x00garbage\r\n\r\n", b"GET /relative HTTP/1.1\r\n\r\n",
                                     b"CONNECT nohostport HTTP/1.1\r\n\r\n", b"half a line"])
def test_garbage_gets_400_and_is_recorded(rig: Rig, garbage: bytes) -> None:
    with rig.raw(garbage, half_close=True) as sock:
        assert _read_all(sock).startswith(b"HTTP/1.1 400")
    [record] = rig.proxy.records()
    assert not record.allowed and record.reason


def test_allowlist_must_be_host_port() -> None:
    for bad in ["nohostport", "host:", ":443", "host:https", "host:0", "host:70000", "::1:443"]:
        with pytest.raises(ValueError, match="host:port|IPv6|port in"):
            EgressProxy(allow=[bad])
    assert parse_hostport("[::1]:8443") == ("::1", 8443)


def test_stop_removes_socket(tmp_path: Path) -> None:
    with EgressProxy([], tmp_path / "p.sock") as proxy:
        assert proxy.socket_path.is_socket()
    assert not proxy.socket_path.exists()
    own = EgressProxy([])  # a private temporary directory, removed on stop
    with own:
        directory = own.socket_path.parent
        assert own.socket_path.is_socket()
    assert not directory.exists()


def test_proxy_env_points_everything_at_the_forwarder() -> None:
    env = proxy_env(3128)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        assert env[name] == "http://127.0.0.1:3128"
    assert env["NO_PROXY"] == env["no_proxy"] == ""


def test_wrap_command_starts_forwarder_then_runs(rig: Rig) -> None:
    # The shape used inside the sandbox: fixed port, sh waits for the ready file, then the command.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    fetch = ("import urllib.request,sys; "
             f"print(urllib.request.urlopen('http://127.0.0.1:{rig.allowed_port}/wrapped', timeout=5).read().decode())")
    cmd = wrap_command([sys.executable, "-c", fetch], sys.executable, str(rig.proxy.socket_path), port,
                       str(rig.tmp / "wrap.ready"))
    env = {"PATH": "/usr/bin:/bin", **proxy_env(port)}
    done = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"hello from {rig.allowed_port} /wrapped"
    assert rig.proxy.records()[-1].allowed
    assert FORWARDER_PATH.is_file()
