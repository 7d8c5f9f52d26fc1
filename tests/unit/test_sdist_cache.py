"""The sdist cache when two builds of one sdist start together.

Found building python-docx==1.2.0 twice at once on a fresh machine: one build crashed with
``FileExistsError: .../staging`` (a traceback) and the other read a half-unpacked tree
(``No module named 'helpers'``). pip is replaced here by a slow writer of a real archive, so the
two fetches overlap for certain without the package index.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import threading
import time
from pathlib import Path

import pytest

from bench import project


def _archive_bytes() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for index in range(50):
            data = f"step {index}\n".encode()
            info = tarfile.TarInfo(f"demo-1.0/features/steps/step_{index}.py")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_two_fetches_of_one_sdist_at_once_see_one_whole_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _archive_bytes()
    downloads = []

    def slow_pip(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        destination = Path(argv[argv.index("-d") + 1])
        downloads.append(destination)
        target = destination / "demo-1.0.tar.gz"
        with open(target, "wb") as handle:  # written in pieces, as a download is
            for start in range(0, len(archive), 64):
                handle.write(archive[start:start + 64])
                handle.flush()
                time.sleep(0.002)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(project.subprocess, "run", slow_pip)
    results: list[tuple[Path, str]] = []
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            results.append(project.fetch_sdist("demo", "1.0", tmp_path))
        except BaseException as error:  # noqa: BLE001 - the test reports what a thread raised
            errors.append(error)

    threads = [threading.Thread(target=fetch) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(downloads) == 1  # the others waited and used the finished archive
    assert len({tree for tree, _ in results}) == 1 and len({sha for _, sha in results}) == 1
    tree = results[0][0]
    assert len(list((tree / "features" / "steps").iterdir())) == 50
    assert not (tmp_path / "demo-1.0" / "staging").exists()
