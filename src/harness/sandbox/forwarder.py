"""Inside the sandbox: 127.0.0.1:PORT → the egress proxy's unix socket.

The sandbox has no network, so HTTP(S)_PROXY cannot point at the host's proxy directly;
this forwarder gives clients an ordinary TCP proxy address and pipes every connection,
byte for byte, to the unix socket bound in from the host. All policy lives in the proxy.

Standard library only, and no imports from this package: it runs inside the sandbox with
whatever ``python3`` is there, as ``python3 /path/to/forwarder.py`` or
``python -m harness.sandbox.forwarder``. Works on Python >= 3.7 (no ``match``,
annotations are strings).

    forwarder.py --socket /run/egress.sock --port 3128 [--ready-file /tmp/egress.ready]

Once listening it writes the port it listens on to the ready file (atomically: a reader
never sees it half-written) or, without ``--ready-file``, prints ``ready PORT`` on stdout.
``--port 0`` picks a free port; read it from the ready signal.
"""

from __future__ import annotations

import argparse
import errno
import os
import selectors
import socket
import sys
import threading
from typing import Any, cast

CHUNK = 65536
# A connection with no traffic either way for this long is dropped, so threads do not
# leak; it must outlast the slowest model response (non-streaming calls think quietly).
IDLE_TIMEOUT = 600.0
CONNECT_TIMEOUT = 10.0


def relay(a: socket.socket, b: socket.socket, idle_timeout: float = IDLE_TIMEOUT, initial_a_to_b: bytes = b"") -> None:
    """Pipe bytes both ways between ``a`` and ``b`` until both directions end, then close both.

    One thread, non-blocking sockets and a selector: a peer that stops reading only stalls
    its own direction (no deadlock of blocking sends), and EOF is passed on as a half-close
    (``shutdown(SHUT_WR)``) so request/response protocols and TLS close cleanly.
    ``initial_a_to_b`` is sent to ``b`` first (bytes already read from ``a``).
    """
    # Per direction: [source, destination, pending bytes, source at EOF, finished]
    dirs: list[list[Any]] = [[a, b, bytearray(initial_a_to_b), False, False], [b, a, bytearray(), False, False]]
    sel = selectors.DefaultSelector()
    try:
        a.setblocking(False)
        b.setblocking(False)
        registered: dict[socket.socket, int] = {}
        while not (dirs[0][4] and dirs[1][4]):
            wanted = {a: 0, b: 0}
            for d in dirs:
                src, dst, buf, eof, done = d
                if done:
                    continue
                if buf:
                    wanted[dst] |= selectors.EVENT_WRITE
                elif eof:
                    # Everything from src is delivered: pass the EOF on.
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    d[4] = True
                else:
                    wanted[src] |= selectors.EVENT_READ
            for sock, events in wanted.items():
                if events and sock not in registered:
                    sel.register(sock, events)
                elif events and registered[sock] != events:
                    sel.modify(sock, events)
                elif not events and sock in registered:
                    sel.unregister(sock)
                if events:
                    registered[sock] = events
                else:
                    registered.pop(sock, None)
            if not registered:
                continue  # both directions just finished
            ready = sel.select(idle_timeout)
            if not ready:
                return  # idle too long
            for key, mask in ready:
                sock = cast(socket.socket, key.fileobj)  # only a and b are registered
                for d in dirs:
                    src, dst, buf = d[0], d[1], d[2]
                    if mask & selectors.EVENT_READ and src is sock and not buf and not d[3]:
                        try:
                            data = sock.recv(CHUNK)
                        except (BlockingIOError, InterruptedError):
                            continue
                        if data:
                            buf += data
                        else:
                            d[3] = True
                    if mask & selectors.EVENT_WRITE and dst is sock and buf:
                        try:
                            sent = sock.send(buf)
                        except (BlockingIOError, InterruptedError):
                            continue
                        del buf[:sent]
    except OSError:
        # Reset or broken pipe on either side: nothing more can be delivered.
        return
    finally:
        sel.close()
        for sock in (a, b):
            try:
                sock.close()
            except OSError:
                pass


def _handle(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.settimeout(CONNECT_TIMEOUT)
        upstream.connect(socket_path)
    except OSError:
        # The proxy is gone: closing the client is the only honest answer.
        upstream.close()
        client.close()
        return
    relay(client, upstream)


def _signal_ready(port: int, ready_file: str | None) -> None:
    if ready_file:
        tmp = f"{ready_file}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, ready_file)
    else:
        sys.stdout.write(f"ready {port}\n")
        sys.stdout.flush()


def serve(socket_path: str, port: int, ready_file: str | None = None, host: str = "127.0.0.1") -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    _signal_ready(listener.getsockname()[1], ready_file)
    while True:
        try:
            client, _ = listener.accept()  # blocks: no busy loop
        except OSError as exc:
            # Out of fds and the like: drop this one, keep serving.
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED):
                continue
            raise
        threading.Thread(target=_handle, args=(client, socket_path), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Forward 127.0.0.1:PORT to the egress proxy's unix socket.")
    parser.add_argument("--socket", required=True, help="the proxy's unix socket, as seen here")
    parser.add_argument("--port", type=int, default=3128, help="TCP port on 127.0.0.1 (0: pick a free one)")
    parser.add_argument("--ready-file", default=None, help="written with the port once listening")
    args = parser.parse_args(argv)
    try:
        serve(args.socket, args.port, args.ready_file)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
