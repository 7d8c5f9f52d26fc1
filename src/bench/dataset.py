"""Read a dataset directory written by ``req2test build``.

``instances`` are agent-visible; ``gold`` is loaded only on explicit request (the
evaluator), so a harness that merely lists instances never touches ground truth.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from bench.errors import UserError
from bench.families import families as group_families
from bench.families import family_key, language_label
from bench.model import DatasetCard, GoldTest, Instance, ProjectRecord


class DatasetError(UserError):
    """A user-facing problem with a dataset directory; one line."""


@dataclass
class Dataset:
    root: Path
    card: DatasetCard
    instances: list[Instance]
    # built on first use: a suite or takeover evaluation looks instances up thousands of times and
    # reads the gold once per judge (records are frozen, so sharing them is safe)
    _by_id: dict[str, Instance] | None = field(default=None, init=False, repr=False, compare=False)
    _gold: dict[str, GoldTest] | None = field(default=None, init=False, repr=False, compare=False)

    def instance(self, instance_id: str) -> Instance:
        if self._by_id is None or len(self._by_id) != len(self.instances):
            self._by_id = {inst.id: inst for inst in self.instances}
        try:
            return self._by_id[instance_id]
        except KeyError:
            raise DatasetError(f"no instance {instance_id!r} in {self.root}") from None

    def project(self, name: str) -> ProjectRecord:
        """The card's record of project ``name``."""
        for project in self.card.projects:
            if project.name == name:
                return project
        raise DatasetError(f"no project {name!r} in {self.root}")

    def family(self, instance_id: str) -> str:
        """The requirement family of an instance: the same requirement in another repository or
        language has the same key (``bench.families.family_key``)."""
        return family_key(self.instance(instance_id))

    def families(self, scored_only: bool = False) -> dict[str, list[str]]:
        """Family key → the ids of this dataset's instances of that family (one id, unless the dataset
        repeats a scenario); ``scored_only``: the card's scored instances only."""
        scored = set(self.card.scored_instances) if scored_only else None
        return group_families(i for i in self.instances if scored is None or i.id in scored)

    @property
    def language(self) -> str:
        """The language and framework of the dataset's tests, e.g. ``Go (godog 0.14.1)``."""
        return language_label(self.card.projects)

    def load_gold(self) -> dict[str, GoldTest]:
        """Every gold record by instance id (a fresh dict each call; the records are read once)."""
        if self._gold is None:
            self._gold = self._read_gold()
        return dict(self._gold)

    def _read_gold(self) -> dict[str, GoldTest]:
        gold: dict[str, GoldTest] = {}
        for project in self.card.projects:
            path = self.root / "gold" / f"{project.name}.jsonl"
            if not path.is_file():
                # a dataset handed out without its ground truth (the test set of a benchmark is)
                raise DatasetError(f"{self.root}: no ground truth for project {project.name} ({path.relative_to(self.root)} "
                                   "is missing): this command needs the dataset as built, gold/ included")
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
