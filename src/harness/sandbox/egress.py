"""Provider-only egress: an allowlisting HTTP proxy outside the sandbox, on a unix socket.

The sandbox has no network (``bwrap --unshare-net`` / docker ``network_mode="none"``). Its
only way out is this proxy: it listens on a unix socket that is bind-mounted into the
sandbox, where ``forwarder.py`` turns it into ``127.0.0.1:PORT`` and ``proxy_env`` points
every client at that. The proxy understands the two forms proxied HTTP uses:

* ``CONNECT host:port`` (HTTPS and anything tunnelled) — ``200`` then raw bytes both ways;
* absolute-form ``GET http://host:port/path`` (plain HTTP, any method) — rewritten to
  origin-form and sent to the origin with ``Connection: close``.

A target is allowed only if its ``host:port`` is literally in the allowlist; the check
comes before any name lookup, so a refused host is never resolved or contacted. Every
request, allowed or not, is recorded as an ``EgressRecord``.
"""

from __future__ import annotations

import re
import selectors
import shlex
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Self
from urllib.parse import urlsplit

from harness.sandbox.base import EgressRecord
from harness.sandbox.forwarder import IDLE_TIMEOUT, relay

FORWARDER_PATH = Path(__file__).with_name("forwarder.py")
DEFAULT_PORT = 3128

_MAX_HEAD = 64 * 1024
_HEAD_END = re.compile(rb"\r?\n\r?\n")
# Hop-by-hop headers a proxy must not pass on (RFC 9110 §7.6.1); Proxy-* is ours, not the origin's.
_HOP_BY_HOP = {"connection", "keep-alive", "te", "trailer", "upgrade", "proxy-connection"}
# Linux sun_path is 108 bytes including the terminating NUL.
_MAX_UNIX_PATH = 107


def parse_hostport(value: str) -> tuple[str, int]:
    """``"host:port"`` (``"[v6]:port"`` for IPv6) → ``(lower-case host, port)``; ValueError otherwise."""
    text = value.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ValueError(f"egress target {value!r} must be host:port, e.g. api.openai.com:443")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"egress target {value!r}: write IPv6 hosts in brackets, e.g. [::1]:443")
    port = int(port_text)
    host = host.lower().rstrip(".")
    if not host or not 0 < port < 65536 or any(c.isspace() or c in "/@[]" for c in host):
        raise ValueError(f"egress target {value!r} must be host:port with a port in 1..65535")
    return host, port


def format_target(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def proxy_env(port: int = DEFAULT_PORT) -> dict[str, str]:
    """Environment for inside the sandbox: every proxy variable at the forwarder, nothing bypasses.

    Both cases are set because tools disagree (curl ignores upper-case HTTP_PROXY, others
    read only upper case). NO_PROXY is emptied so an inherited value cannot route around it.
    """
    url = f"http://127.0.0.1:{port}"
    env = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")}
    env.update(NO_PROXY="", no_proxy="")
    return env


def forwarder_command(python: str, socket_in_sandbox: str, port: int, ready_file: str, *,
                      script: str | Path = FORWARDER_PATH) -> list[str]:
    """The command that starts the forwarder inside the sandbox.

    ``script`` is where ``forwarder.py`` is visible inside (bind ``FORWARDER_PATH`` read-only
    there, or at the same path). ``-I``: the sandbox's PYTHON* variables and site dirs do
    not matter to it. Once listening it writes the port to ``ready_file``.
    """
    return [python, "-I", str(script), "--socket", socket_in_sandbox, "--port", str(port),
            "--ready-file", ready_file]


def wrap_command(command: list[str], python: str, socket_in_sandbox: str, port: int = DEFAULT_PORT,
                 ready_file: str = "/tmp/.egress-forwarder.ready", *, script: str | Path = FORWARDER_PATH,
                 ready_timeout: float = 10.0) -> list[str]:
    """``command`` preceded by the forwarder: start it, wait for its ready file, run, stop it.

    Each sandbox exec is its own process tree, so the forwarder is started per exec. Exit
    status 125 (and a line on stderr) if the forwarder does not come up in ``ready_timeout``.
    """
    fwd = shlex.join(forwarder_command(python, socket_in_sandbox, port, ready_file, script=script))
    ready = shlex.quote(ready_file)
    tries = max(1, int(ready_timeout / 0.05))
    script_text = (
        f"rm -f {ready}; {fwd} & fwd=$!; n=0; "
        f"while [ ! -s {ready} ]; do n=$((n+1)); "
        f"if [ $n -gt {tries} ] || ! kill -0 $fwd 2>/dev/null; then "
        f"echo 'egress forwarder did not start' >&2; kill $fwd 2>/dev/null; exit 125; fi; sleep 0.05; done; "
        '"$@"; rc=$?; kill $fwd 2>/dev/null; exit $rc'
    )
    return ["sh", "-c", script_text, "sh", *command]


class _BadRequest(Exception):
    def __init__(self, reason: str, method: str = "", target: str = "") -> None:
        super().__init__(reason)
        self.reason, self.method, self.target = reason, method, target


class EgressProxy:
    """The allowlisting proxy on a unix socket; one daemon thread accepts, one thread per connection.

    ``with EgressProxy(["api.openai.com:443"], sock) as proxy: ...`` then ``proxy.records()``.
    Without ``socket_path`` it makes a private temporary directory (removed on stop), since
    unix socket paths must stay short.
    """

    def __init__(self, allow: list[str], socket_path: Path | str | None = None, *,
                 idle_timeout: float = IDLE_TIMEOUT, head_timeout: float = 30.0,
                 connect_timeout: float = 10.0) -> None:
        # Validate before touching the filesystem, so a bad policy leaves nothing behind.
        self.allow: frozenset[tuple[str, int]] = frozenset(parse_hostport(entry) for entry in allow)
        if socket_path is not None and len(str(socket_path).encode()) > _MAX_UNIX_PATH:
            raise ValueError(f"unix socket path too long ({len(str(socket_path))} > {_MAX_UNIX_PATH}): {socket_path}")
        self._own_dir: Path | None = None
        self._socket_path = Path(socket_path) if socket_path is not None else None
        self.idle_timeout = idle_timeout
        self.head_timeout = head_timeout
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._records: list[EgressRecord] = []
        self._conns: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False

    # ---- lifecycle -------------------------------------------------------------------------

    @property
    def socket_path(self) -> Path:
        if self._socket_path is None:
            self._own_dir = Path(tempfile.mkdtemp(prefix="r2t-egress-"))
            self._socket_path = self._own_dir / "proxy.sock"
        return self._socket_path

    def start(self) -> Self:
        if self._thread is not None:
            raise RuntimeError("egress proxy already started")
        path = self.socket_path
        if path.is_socket():
            path.unlink()  # a stale socket from a crashed run; anything else we refuse to clobber
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(path))
            # connect() on a unix socket needs write permission; the sandbox runs as another uid.
            path.chmod(0o666)
            listener.listen(128)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._stopping = False
        self._wake = socket.socketpair()
        self._thread = threading.Thread(target=self._accept_loop, name="egress-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, cut open connections, remove the socket file. Idempotent."""
        if self._thread is None:
            return
        assert self._wake is not None and self._listener is not None
        self._wake[1].send(b"x")  # wakes the accept loop's select
        self._thread.join(timeout=5)
        with self._lock:
            self._stopping = True  # a handler still connecting upstream gives up (see _handle)
            conns = list(self._conns)
        for conn in conns:
            # shutdown (not close) wakes the relay's selector; its thread closes the fd.
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._listener.close()
        for s in self._wake:
            s.close()
        self._thread = None
        path = self._socket_path
        if path is not None:
            try:
                if path.is_socket():
                    path.unlink()
            except OSError:
                pass
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def records(self) -> list[EgressRecord]:
        with self._lock:
            return list(self._records)

    def is_allowed(self, host: str, port: int) -> bool:
        return (host.lower().rstrip("."), port) in self.allow

    # ---- serving ---------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._listener is not None and self._wake is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ)
            sel.register(self._wake[0], selectors.EVENT_READ)
            while True:
                events = sel.select()
                if any(key.fileobj is self._wake[0] for key, _ in events):
                    return
                try:
                    conn, _ = self._listener.accept()
                except OSError:
                    continue  # EMFILE, ECONNABORTED: keep serving the others
                with self._lock:
                    self._conns.add(conn)
                threading.Thread(target=self._serve, args=(conn,), name="egress-conn", daemon=True).start()

    def _record(self, target: str, method: str, allowed: bool, reason: str = "") -> None:
        with self._lock:
            self._records.append(EgressRecord(time=time.time(), target=target, method=method,
                                              allowed=allowed, reason=reason))

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._handle(conn)
        except Exception as exc:  # noqa: BLE001 - a handler thread must not die unrecorded
            self._record("", "", False, f"proxy error: {type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except OSError:
                pass

    def _handle(self, conn: socket.socket) -> None:
        try:
            head, rest = self._read_head(conn)
            method, host, port, forward = self._parse(head)
        except _Silent:
            return
        except _BadRequest as bad:
            self._record(bad.target, bad.method, False, bad.reason)
            self._reply(conn, 400, "Bad Request", f"bad proxy request: {bad.reason}")
            return
        target = format_target(host, port)
        if not self.is_allowed(host, port):
            reason = f"{target} not allowed by the sandbox egress policy"
            self._record(target, method, False, reason)
            self._reply(conn, 403, "Forbidden", f"egress to {reason}")
            return
        try:
            upstream = socket.create_connection((host, port), timeout=self.connect_timeout)
        except OSError as exc:
            self._record(target, method, True, f"connect failed: {exc}")
            self._reply(conn, 502, "Bad Gateway", f"cannot reach {target}: {exc}")
            return
        self._record(target, method, True)
        with self._lock:
            if self._stopping:
                upstream.close()
                return
            self._conns.add(upstream)
        try:
            if method == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            # relay closes both sockets; the client's own close in _serve is then a no-op.
            relay(conn, upstream, self.idle_timeout, initial_a_to_b=rest if method == "CONNECT" else forward + rest)
        except OSError:
            upstream.close()  # the client left before the tunnel opened
        finally:
            with self._lock:
                self._conns.discard(upstream)

    def _read_head(self, conn: socket.socket) -> tuple[bytes, bytes]:
        """Bytes up to the blank line, and whatever came after it (body or tunnel data)."""
        conn.settimeout(self.head_timeout)
        buf = b""
        while True:
            match = _HEAD_END.search(buf)
            if match:
                return buf[:match.start()], buf[match.end():]
            if len(buf) > _MAX_HEAD:
                raise _BadRequest(f"request head larger than {_MAX_HEAD} bytes")
            try:
                data = conn.recv(65536)
            except TimeoutError:
                data = b""
                if buf:
                    raise _BadRequest(f"incomplete request head after {self.head_timeout:g} s: {_show(buf)}")
            if not data:
                if not buf:
                    raise _Silent  # connected and left without a word: not a request
                raise _BadRequest(f"incomplete request head: {_show(buf)}")
            buf += data

    def _parse(self, head: bytes) -> tuple[str, str, int, bytes]:
        """(method, host, port, head to send to the origin) — the last is empty for CONNECT."""
        try:
            text = head.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
            raise _BadRequest("undecodable request head") from None
        lines = text.splitlines()
        parts = lines[0].split(" ") if lines else []
        if len(parts) != 3 or not parts[2].startswith("HTTP/") or not parts[0].isalpha():
            raise _BadRequest(f"not an HTTP request line: {_show(head)}")
        method, uri, version = parts
        if method == "CONNECT":
            try:
                host, port = parse_hostport(uri)
            except ValueError:
                raise _BadRequest(f"CONNECT target must be host:port, got {uri!r}", method) from None
            return method, host, port, b""
        try:
            url = urlsplit(uri)
            port = url.port or 80
        except ValueError:
            raise _BadRequest(f"bad URL {uri!r}", method) from None
        if url.scheme.lower() != "http" or not url.hostname:
            raise _BadRequest(f"a proxy needs absolute-form http://host[:port]/path or CONNECT, got {uri!r}", method)
        host = url.hostname.lower().rstrip(".")
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        return method, host, port, self._rewrite(method, path, version, lines[1:], url.netloc.rpartition("@")[2])

    @staticmethod
    def _rewrite(method: str, path: str, version: str, header_lines: list[str], netloc: str) -> bytes:
        headers: list[tuple[str, str]] = []
        for line in header_lines:
            if line[:1] in (" ", "\t") and headers:  # obsolete line folding: part of the previous value
                name, value = headers[-1]
                headers[-1] = (name, f"{value} {line.strip()}")
                continue
            name, sep, value = line.partition(":")
            if not sep or not name.strip():
                raise _BadRequest(f"bad header line {line[:80]!r}", method)
            headers.append((name.strip(), value.strip()))
        # Headers the client named in Connection are hop-by-hop too.
        drop = set(_HOP_BY_HOP)
        for name, value in headers:
            if name.lower() == "connection":
                drop.update(token.strip().lower() for token in value.split(","))
        kept = [(n, v) for n, v in headers if n.lower() not in drop and not n.lower().startswith("proxy-")]
        if not any(n.lower() == "host" for n, _ in kept):
            kept.insert(0, ("Host", netloc))
        kept.append(("Connection", "close"))
        out = [f"{method} {path} {version}"] + [f"{n}: {v}" for n, v in kept]
        return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")

    @staticmethod
    def _reply(conn: socket.socket, status: int, phrase: str, message: str) -> None:
        body = (message + "\n").encode("utf-8", "replace")
        head = (f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("latin-1")
        try:
            conn.sendall(head + body)
            # Half-close and drain what the client still sends (a request body): closing with
            # unread data would reset the connection and the client might never see the answer.
            conn.shutdown(socket.SHUT_WR)
            conn.settimeout(2.0)
            drained = 0
            while drained < 1 << 20:
                data = conn.recv(65536)
                if not data:
                    break
                drained += len(data)
        except OSError:
            pass


class _Silent(Exception):
    """The client closed without sending anything."""


def _show(data: bytes, limit: int = 80) -> str:
    return repr(data[:limit].decode("latin-1")) + ("…" if len(data) > limit else "")
