"""Whether anything in a directory tree may have changed, for the price of one read.

The evaluation worker restores its workspace to the pristine state before every run. A
full manifest scan (a stat per entry) costs milliseconds on a real project, and almost
every run changes nothing; an inotify watch on every directory of the tree answers
"nothing happened" with a single non-blocking read, and only then is the scan skipped.

Why the watch cannot be dodged by the code it watches: the descriptor lives in the
worker only (a run child closes every descriptor but its result pipe, and the worker is
not dumpable, so /proc/<worker>/fd is closed to it); writes through ``write`` raise
IN_MODIFY, metadata changes IN_ATTRIB, new/removed/renamed entries IN_CREATE/IN_DELETE/
IN_MOVED_*; a shared writable mapping needs a descriptor opened for writing, whose last
release (at the latest when the writer has exited, which the worker waits for before it
asks) raises IN_CLOSE_WRITE. A hard link into the tree is an IN_CREATE; one out of it
cannot exist (the workspace is its own mount). An overflowed queue, a watch that could not
be placed, or no inotify at all make ``changed()`` answer True: the caller scans.

Standard library + ctypes (runs in the project's environment).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        return libc
    except (OSError, AttributeError):
        return None


class ChangeWatch:
    """Watches every directory under ``root`` except ``skip`` (read-only mounts)."""

    def __init__(self, root: str, skip: list[str]) -> None:
        self.root = os.path.abspath(root)
        self.skip = {os.path.abspath(p) for p in skip}
        self.libc = _libc()
        self.fd = -1
        self.complete = False  # every directory has a watch
        self.arm()

    def arm(self) -> None:
        """(Re)place the watches: after the caller restored the tree (its own writes are
        events too, and restored directories are new inodes)."""
        self.close()
        if self.libc is None:
            return
        fd = self.libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return
        self.fd = fd
        complete = True
        stack = [self.root]
        while stack:
            directory = stack.pop()
            if self.libc.inotify_add_watch(fd, os.fsencode(directory), MASK) < 0:
                complete = False  # e.g. the per-user watch limit: fall back to scanning
                break
            try:
                entries = list(os.scandir(directory))
            except OSError:
                complete = False
                break
            for entry in entries:
                if entry.path not in self.skip and entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
        self.complete = complete

    def changed(self) -> bool:
        """True when something may have changed since the last call (events drained)."""
        if self.fd < 0 or not self.complete:
            return True
        seen = False
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return seen
            except OSError:
                return True
            if not data:
                return seen
            seen = True

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
        self.fd = -1
        self.complete = False
