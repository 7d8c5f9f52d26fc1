"""Read a dataset directory written by ``req2test build``.

``instances`` are agent-visible; ``gold`` is loaded only on explicit request (the
evaluator), so a harness that merely lists instances never touches ground truth.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from bench.model import DatasetCard, GoldTest, Instance, ProjectRecord


class DatasetError(Exception):
    """A user-facing problem with a dataset directory; one line."""


@dataclass
class Dataset:
    root: Path
    card: DatasetCard
    instances: list[Instance]

    def instance(self, instance_id: str) -> Instance:
        for inst in self.instances:
            if inst.id == instance_id:
                return inst
        raise DatasetError(f"no instance {instance_id!r} in {self.root}")

    def project(self, name: str) -> ProjectRecord:
        """The card's record of project ``name``."""
        for project in self.card.projects:
            if project.name == name:
                return project
        raise DatasetError(f"no project {name!r} in {self.root}")

    def load_gold(self) -> dict[str, GoldTest]:
        gold: dict[str, GoldTest] = {}
        for project in self.card.projects:
            path = self.root / "gold" / f"{project.name}.jsonl"
            for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        record = GoldTest.model_validate_json(line)
                    except ValidationError as exc:
                        raise DatasetError(f"{path}:{line_no}: invalid gold record: {exc.errors()[0]['msg']}") from exc
                    gold[record.instance_id] = record
        return gold

    def verify(self) -> list[str]:
        """Artifacts whose content no longer matches the card's hashes."""
        problems = []
        for rel, digest in self.card.files.items():
            path = self.root / rel
            if not path.is_file():
                problems.append(f"{rel}: missing")
            elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                problems.append(f"{rel}: content changed")
        return problems


def load_dataset(root: Path) -> Dataset:
    root = Path(root)
    card_path = root / "dataset.json"
    if not root.is_dir():
        raise DatasetError(f"{root} is not a directory")
    if not card_path.is_file():
        raise DatasetError(f"{root} is not a dataset (no dataset.json); build one with `req2test build`")
    try:
        card = DatasetCard.model_validate_json(card_path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise DatasetError(f"{card_path}: invalid dataset card: {exc.errors()[0]['msg']}") from exc
    instances = []
    path = root / "instances.jsonl"
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                instances.append(Instance.model_validate_json(line))
            except ValidationError as exc:
                raise DatasetError(f"{path}:{line_no}: invalid instance: {exc.errors()[0]['msg']}") from exc
    return Dataset(root=root, card=card, instances=instances)
