"""JSON Schemas of the data a user exchanges with req2test, generated from the models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bench.model import DatasetCard, GoldTest, Instance, InstanceResult, Prediction, RunSummary

SCHEMAS: dict[str, type[BaseModel]] = {
    "prediction": Prediction,
    "result": InstanceResult,
    "summary": RunSummary,
    "instance": Instance,
    "gold": GoldTest,
    "dataset-card": DatasetCard,
}


def schema(name: str) -> dict[str, Any]:
    return SCHEMAS[name].model_json_schema()


def write_all(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(schema(name), indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return written
