"""A minimal ``/etc`` for sandboxes (standard library only): only what programs need to run.

Why not the host's ``/etc``: bubblewrap started by root maps the sandbox's uid 65534 to host
root, so every root-owned file bound in is readable inside, ``/etc/shadow`` and
``/etc/ssl/private`` included; and the rest (hostname, machine-id, passwd, credentials
helpers in gitconfig, pip/npm configuration) tells an agent about the host. Inside, ``/etc``
holds:

* generated files: ``passwd`` and ``group`` with root and nobody (65534) only — the
  sandbox's user must resolve (``getpass.getuser``, ``pwd.getpwuid``, git's ident, ``id``);
  ``hosts`` with localhost and the sandbox's hostname (``bwrap --hostname``);
  ``nsswitch.conf`` reading files only; a ``resolv.conf`` pointing at loopback, where nothing
  answers (egress goes through the proxy, which resolves names outside);
* host files bound read-only, each for a reason given in ``HOST_ENTRIES``.

The generated files live in a directory of their own (content-addressed, so concurrent
processes agree) and are bound read-only like the rest. bubblewrap gets a read-only tmpfs
at ``/etc`` holding the binds (``bwrap_etc_args``); docker gets volumes
(``docker_etc_binds``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tempfile
from pathlib import Path

NOBODY = 65534
SANDBOX_HOSTNAME = "sandbox"

GENERATED: dict[str, str] = {
    # nobody's home and shell match the sandbox environment (HOME=/tmp); an agent may run its
    # tools through the login shell it finds in passwd, so it must be a real one
    "passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
              f"nobody:x:{NOBODY}:{NOBODY}:nobody:/tmp:/bin/sh\n",
    "group": f"root:x:0:\nnogroup:x:{NOBODY}:\n",
    # the hostname with a domain: git derives a usable committer ident from it
    "hosts": f"127.0.0.1\tlocalhost\n127.0.1.1\t{SANDBOX_HOSTNAME}.localdomain {SANDBOX_HOSTNAME}\n"
             "::1\tlocalhost ip6-localhost ip6-loopback\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\n"
                     "protocols: files\nservices: files\nethers: files\nrpc: files\n",
    # resolvers that read this file directly (c-ares, Go, musl) fail at once instead of timing out
    "resolv.conf": "# no DNS inside the sandbox: the egress proxy resolves names outside\n"
                   "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
}

# Host entries under /etc bound read-only when they exist, and why each is needed. Never the
# whole /etc, and never /etc/ssl/private (host keys).
HOST_ENTRIES: dict[str, str] = {
    "ld.so.cache": "the dynamic loader finds shared libraries through it",
    "ld.so.conf": "read by ldconfig -p and tools that inspect the loader configuration",
    "ld.so.conf.d": "included by ld.so.conf",
    "localtime": "local time zone",
    "timezone": "local time zone name (tzlocal, Debian tools)",
    "ssl/certs": "CA certificates: agents talk TLS to their provider through the egress proxy",
    "ssl/openssl.cnf": "OpenSSL's configuration (/usr/lib/ssl/openssl.cnf points here)",
    "ca-certificates": "CA certificate configuration (Debian)",
    "ca-certificates.conf": "CA certificate selection (Debian)",
    "alternatives": "Debian alternatives: /usr/bin/awk, which, nodejs, pager, editor link into it",
    "mime.types": "MIME types (Python's mimetypes, node)",
    "protocols": "getprotobyname (socket libraries)",
    "services": "getservbyname (socket libraries, URL ports)",
    "os-release": "platform detection by agents; the same text as /usr/lib/os-release, already visible",
}


def _digest() -> str:
    text = "\0".join(f"{name}\0{content}" for name, content in sorted(GENERATED.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _private_dir(path: Path) -> bool:
    """``path`` is a real directory of ours that nobody else can write (not a planted link)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _base_dir(directory: Path | None) -> Path:
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        return directory
    return _default_base_dir()


@functools.cache
def _default_base_dir() -> Path:
    # a per-user directory in the temp dir, reused across processes; another user's (or a
    # writable) one is never trusted: then a fresh private one
    base = Path(tempfile.gettempdir()) / f"req2test-etc-{os.getuid()}"
    try:
        base.mkdir(mode=0o755)
    except FileExistsError:
        pass
    except OSError:
        return Path(tempfile.mkdtemp(prefix="req2test-etc-"))
    return base if _private_dir(base) else Path(tempfile.mkdtemp(prefix="req2test-etc-"))


def build_minimal_etc(directory: Path | None = None) -> Path:
    """The directory holding the generated files: written once, then only checked (a few small
    reads per sandbox), so a temp cleaner that removed them cannot break the next sandbox."""
    target = _base_dir(directory) / f"etc-{_digest()}"
    target.mkdir(mode=0o755, exist_ok=True)
    for name, content in GENERATED.items():
        path = target / name
        try:
            if stat.S_ISREG(path.lstat().st_mode) and path.read_text() == content:
                continue
        except OSError:
            pass
        # write beside, then rename: a sandbox starting concurrently sees the old or the new file
        fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{name}.")
        with os.fdopen(fd, "w") as fh:
            fh.write(content)
        os.chmod(tmp, 0o644)  # docker's uid 65534 reads them as itself
        os.replace(tmp, path)
    return target


def etc_entries(directory: Path | None = None) -> list[tuple[str, str]]:
    """(host source, path inside) of everything in the sandbox's /etc, generated files first."""
    generated = build_minimal_etc(directory)
    entries = [(str(generated / name), f"/etc/{name}") for name in GENERATED]
    for name in HOST_ENTRIES:
        host = Path("/etc") / name
        if host.exists():  # follows links: a dangling one is left out
            entries.append((str(host), f"/etc/{name}"))
    return entries


def bwrap_etc_args(directory: Path | None = None) -> list[str]:
    """bubblewrap arguments that build /etc: a tmpfs, the entries bound read-only, then the tmpfs
    made read-only too (the sandbox's root tmpfs is writable, and a writable /etc would let a
    command plant e.g. /etc/ld.so.preload for its own children)."""
    args = ["--tmpfs", "/etc"]
    made = {"/etc"}
    for source, inside in etc_entries(directory):
        # intermediate directories explicitly (0755): ones bwrap makes itself are 0700
        parents = [str(p) for p in reversed(Path(inside).parents) if str(p).startswith("/etc/")]
        for parent in parents:
            if parent not in made:
                args += ["--dir", parent]
                made.add(parent)
        host = Path(source)
        target = os.readlink(host) if host.is_symlink() else ""
        if target and _resolves_into_usr(host):
            # e.g. localtime -> /usr/share/zoneinfo/Etc/UTC: keep the link (time zone libraries
            # read the zone's name from it); its target is visible through /usr anyway
            args += ["--symlink", target, inside]
        else:
            args += ["--ro-bind", source, inside]
    return args + ["--remount-ro", "/etc"]


def docker_etc_binds(directory: Path | None = None) -> dict[str, dict[str, str]]:
    """The same entries as docker volumes (host path → bind); docker follows links in sources."""
    return {source: {"bind": inside, "mode": "ro"} for source, inside in etc_entries(directory)}


def _resolves_into_usr(path: Path) -> bool:
    try:
        return path.resolve().is_relative_to("/usr")
    except OSError:
        return False
