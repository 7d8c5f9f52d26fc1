"""The audit-event vocabulary and path helpers of the runtime screen (``strict_hook``: deny by
default, every evaluation run child).

STANDARD LIBRARY ONLY, like the screen itself. What an event is about is kept apart from the
policy that decides on it.
"""

from __future__ import annotations

import os
import re
import sys

# attributes whose reads CPython audits as ``object.__getattr__``: frames and code objects
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code", "gi_yieldfrom", "cr_await"})
CODE_ATTRS = frozenset({"__code__", "gi_code", "cr_code", "ag_code"})
READ_ATTRS = FRAME_ATTRS | CODE_ATTRS
# events that write a path: argument positions of the written paths
WRITES: dict[str, tuple[int, ...]] = {
    "os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1), "os.truncate": (0,), "os.chmod": (0,),
    "os.chown": (0,), "os.mkdir": (0,), "os.symlink": (1,), "os.link": (1,), "os.utime": (0,),
    "shutil.rmtree": (0,), "shutil.copyfile": (1,), "shutil.copytree": (1,), "shutil.move": (0, 1),
    "shutil.chown": (0,),
}
SPAWN = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"})
# what a started process would need to signal or trace another one
SIGNAL_TOOLS = frozenset({"kill", "pkill", "killall", "gdb", "strace", "ltrace", "pgrep", "pidof"})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
SHELL_SIGNAL = re.compile(r"(^|[\s;&|(`$])(kill|pkill|killall|gdb|strace|ltrace)(\s|$)")
PYTHON_SIGNAL = re.compile(r"\b(os\.kill|killpg|pidfd_send_signal|ptrace|ctypes|SIGKILL|SIGTERM|SIGSTOP)\b")


def prefixes(paths: list[str]) -> tuple[str, ...]:
    """Directory prefixes (absolute and resolved, with a trailing separator), longest first."""
    out: set[str] = set()
    for path in paths:
        if path:
            for variant in (os.path.abspath(path), os.path.realpath(path)):
                out.add(variant.rstrip(os.sep) + os.sep)
    return tuple(sorted(out, key=len, reverse=True))


def package_dir(name: str) -> str:
    """The directory of an imported (or importable) package, "" when there is none."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) if module is not None else None
    if not path:
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
            path = spec.origin if spec is not None else None
        except (ImportError, ValueError):
            path = None
    return os.path.dirname(path) if path else ""
