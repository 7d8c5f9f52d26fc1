"""What the real-corpus tests share, full builds (test_python_docx.py, test_py_algorand_sdk.py) and
CI-sized slices (test_corpus_slices.py) alike: assembling py-algorand-sdk, and the generic attacks."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from bench.dataset import load_dataset
from bench.evaluate import EvaluateOptions, evaluate


def assemble_py_algorand_sdk(dest: Path) -> Path:
    """py-algorand-sdk with algorand-sdk-testing's features at the pinned commits (from the fetched
    mirrors, by the recipe kept outside the repository: tests/integration/recipes.py); the test is
    skipped, saying why, when the recipe or the mirrors are not here."""
    from tests.integration.recipes import recipe

    corpus = recipe("py_algorand_sdk")

    try:
        return corpus.assemble(dest, corpus.default_source("py-algorand-sdk"),
                               corpus.default_source("algorand-sdk-testing"))
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"the py-algorand-sdk corpus cannot be fetched here: {exc}")


def assert_generic_attacks_defeated(dataset_dir: Path, tmp_path: Path, instances: int, **options: float) -> None:
    """The attacks an agent needs no instance knowledge for (tests/adversarial/generic.py), each on
    ``instances`` instances with kills: none may score KillComplete, break the evaluator, or pass
    with kills."""
    from tests.adversarial.generic import GENERIC

    gold = load_dataset(dataset_dir).load_gold()
    sample = random.Random(1).sample(sorted(i for i, g in gold.items() if g.kills), instances)
    for name, code in GENERIC.items():
        path = tmp_path / f"attack-{name}.jsonl"
        path.write_text("".join(json.dumps({"instance_id": i, "files": {"features/steps/generic_steps.py": code}})
                                + "\n" for i in sample))
        evaluate(dataset_dir, path, tmp_path / f"attack-{name}",
                 EvaluateOptions(instances=sample, timeout=60, **options))
        rows = [json.loads(line) for line in (tmp_path / f"attack-{name}" / "results.jsonl").read_text().splitlines()]
        assert len(rows) == instances
        for row in rows:
            assert not row["kill_complete"], (name, row)
            assert row["outcome"] != "infrastructure_failure", (name, row)
            assert row["generated_kills"] == 0 or row["outcome"] != "pass", (name, row)
