"""The one record every tamper screen produces."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

EVIDENCE_LIMIT = 200


class TamperFinding(BaseModel):
    """One place where a prediction reaches past the public test API.

    ``kind`` is a short slug (see ``bench.frameworks.behave.guard.static_scan.KINDS``); ``path`` is the
    prediction file relative to the project root (runtime findings may carry an
    absolute path or ``""`` when no file is known); ``evidence`` is the offending code.
    """

    model_config = ConfigDict(extra="forbid")

    kind: str
    path: str
    line: int
    evidence: str
    screen: Literal["static", "runtime"]

    @field_validator("evidence", mode="before")
    @classmethod
    def _clip(cls, value: object) -> str:
        # evidence is for a human reading a verdict: one short line, never a whole file
        text = " ".join(str(value).split())
        return text if len(text) <= EVIDENCE_LIMIT else text[: EVIDENCE_LIMIT - 1] + "…"
