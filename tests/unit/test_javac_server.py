"""The warm javac (``javac_server``): real javac in one JVM, many compiles, errors as javac's
own diagnostics, a dead server restarted for the next request."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.javac_server import JavacPool, JavacServer

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK")


def _source(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / "src" / f"{name}.java"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"public class {name} {{ {body} }}\n")
    return path


def test_compiles_many_source_sets_in_one_process(tmp_path: Path) -> None:
    server = JavacServer()
    try:
        good = _source(tmp_path, "Good", 'public static void main(String[] a) { System.out.print("hi " + 6 * 7); }')
        first = server.compile(["-d", str(tmp_path / "out1"), str(good)])
        assert first.ok, first.output
        pid = server._proc.pid if server._proc else None
        second = server.compile(["-d", str(tmp_path / "out2"), str(good)])
        assert second.ok and server._proc is not None and server._proc.pid == pid  # the same JVM
        ran = subprocess.run(["java", "-cp", str(tmp_path / "out2"), "Good"], capture_output=True, text=True,
                             check=True)
        assert ran.stdout == "hi 42"

        bad = _source(tmp_path, "Bad", "int f() { return \"x\" - 1; }")
        failed = server.compile(["-d", str(tmp_path / "out3"), str(bad)])
        assert not failed.ok
        assert failed.errors() == [(str(bad), 1, 41, "bad operand types for binary operator '-'")]
        again = server.compile(["-d", str(tmp_path / "out4"), str(good)])
        assert again.ok  # a failed compile leaves the server usable
    finally:
        server.close()


def test_a_dead_server_is_restarted(tmp_path: Path) -> None:
    good = _source(tmp_path, "Good", "")
    with JavacPool() as pool:
        assert pool.compile(["-d", str(tmp_path / "a"), str(good)]).ok
        server = pool._local.server
        assert server._proc is not None
        server._proc.kill()
        server._proc.wait()
        result = pool.compile(["-d", str(tmp_path / "b"), str(good)])
        assert result.ok, result.output
        assert (tmp_path / "b" / "Good.class").is_file()


def test_an_argument_with_a_line_break_is_refused(tmp_path: Path) -> None:
    server = JavacServer()
    try:
        with pytest.raises(ValueError, match="line break"):
            server.compile(["-d", "a\nb"])
    finally:
        server.close()
