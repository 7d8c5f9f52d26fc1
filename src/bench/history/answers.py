"""Phase A of the two-phase protocol (ReqMemBench §3.2): the requirement answer an agent gives
from the history and the request alone, frozen before any delivery starts, and its diagnostics.

An answer names the atoms the request concerns (their ids, as the history's events print them:
``<feature file>::<scenario name>``), the earlier commits it relies on, their state before the
request, the decision (act, or ask for clarification) and their state after it. Scored against
the gold of the target (``bench.history.diagnostics``):

- relevant atoms and evidence commits: precision / recall / F1 (evidence by unique sha prefix);
- attribute reconstruction of the pre-state (steps, examples, tags, deferred; exact);
- post-state score 2·Σs/(|R̂|+|R|), statements matched one-to-one by token Jaccard similarity of
  their rendered Gherkin (scenario name and steps); exact post-state: every gold atom stated
  with exactly its steps and nothing extra.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from bench.history.atoms import AtomState
from bench.history.diagnostics import SetScore, attribute_reconstruction, post_state_score, set_score
from bench.history.takeover import HistoryEntry, TakeoverGold, TakeoverTarget
from bench.model import Frozen


class StatedAtom(Frozen):
    atom: str = Field(description="atom id: '<feature file>::<scenario name>'")
    scenario: str = ""
    steps: list[str] = Field(default_factory=list, description="'Given …', 'When …', 'Then …' lines")
    examples: list[list[str]] = Field(default_factory=list, description="header row then rows, all tables")
    tags: list[str] = Field(default_factory=list)
    deferred: bool = False


class TakeoverAnswer(Frozen):
    target_id: str
    relevant_atoms: list[str] = Field(default_factory=list)
    evidence_commits: list[str] = Field(default_factory=list)
    pre_state: list[StatedAtom] = Field(default_factory=list)
    decision: Literal["act", "clarify"] = "act"
    post_state: list[StatedAtom] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)
    error: str = Field("", description="why the answer could not be read (it then scores as empty)")


class AnswerScore(Frozen):
    target_id: str
    relevant: SetScore
    evidence: SetScore
    attribute_reconstruction: float | None
    decision_correct: bool
    post_state: float | None
    exact_post_state: bool


def stated(state: AtomState) -> StatedAtom:
    """The gold atom in the answer's vocabulary."""
    examples: list[list[str]] = []
    for table in state.examples:
        examples += [list(table.header), *[list(r) for r in table.rows]]
    steps = [f"{str(getattr(s.type, 'value', s.type)).capitalize()} {s.text}" for s in [*state.background, *state.steps]]
    return StatedAtom(atom=state.atom_id, scenario=state.scenario, steps=steps, examples=examples,
                      tags=sorted(state.tags), deferred=state.deferred)


def render(atom: StatedAtom) -> str:
    lines = [f"Scenario: {atom.scenario}", *atom.steps]
    lines += [" | ".join(row) for row in atom.examples]
    return "\n".join(lines)


def _attributes(atom: StatedAtom) -> dict[str, Any]:
    return {"steps": atom.steps, "examples": atom.examples, "tags": sorted(atom.tags), "deferred": atom.deferred}


def resolve_commits(cited: list[str], history: list[HistoryEntry]) -> set[str]:
    """Cited shas (full or a unique prefix of 7+ characters) as full shas; others are kept as
    written, so they count as wrong, not as absent."""
    out = set()
    for raw in cited:
        text = raw.strip().lower()
        hits = [h.sha for h in history if len(text) >= 7 and h.sha.startswith(text)]
        out.add(hits[0] if len(hits) == 1 else text)
    return out


def score_answer(answer: TakeoverAnswer, target: TakeoverTarget, gold: TakeoverGold,
                 history: list[HistoryEntry]) -> AnswerScore:
    gold_pre = {s.atom_id: stated(s) for s in target.oracle_pre_state}
    gold_post = [stated(s) for s in target.oracle_post_state if not s.deferred]
    mentioned = set(answer.relevant_atoms) | {a.atom for a in answer.pre_state} | {a.atom for a in answer.post_state}
    reconstruction = attribute_reconstruction({a.atom: _attributes(a) for a in answer.pre_state},
                                              {k: _attributes(v) for k, v in gold_pre.items()})
    acting = answer.decision == "act" and not answer.error  # no readable answer decided nothing
    post = post_state_score([render(a) for a in answer.post_state], [render(a) for a in gold_post]) if acting \
        else None
    exact = acting and sorted((a.atom, a.steps, a.examples) for a in answer.post_state) == \
        sorted((a.atom, a.steps, a.examples) for a in gold_post)
    return AnswerScore(target_id=target.id, relevant=set_score(mentioned, gold.relevant_atoms),
                       evidence=set_score(resolve_commits(answer.evidence_commits, history), gold.evidence_commits),
                       attribute_reconstruction=reconstruction, decision_correct=acting,
                       post_state=(post.score if post is not None else 0.0), exact_post_state=exact)


def gold_answer(target: TakeoverTarget, gold: TakeoverGold) -> TakeoverAnswer:
    """What a perfect phase A says (the oracle calibration)."""
    return TakeoverAnswer(target_id=target.id, relevant_atoms=list(gold.relevant_atoms),
                          evidence_commits=list(gold.evidence_commits),
                          pre_state=[stated(s) for s in target.oracle_pre_state], decision="act",
                          post_state=[stated(s) for s in target.oracle_post_state if not s.deferred])


def summarize_answers(scores: list[AnswerScore]) -> dict[str, Any]:
    def mean(values: list[float | None]) -> float | None:
        kept = [v for v in values if v is not None]
        return round(sum(kept) / len(kept), 4) if kept else None

    return {"answers": len(scores),
            "relevant_f1": mean([s.relevant.f1 for s in scores]),
            "relevant_recall": mean([s.relevant.recall for s in scores]),
            "evidence_f1": mean([s.evidence.f1 for s in scores]),
            "attribute_reconstruction": mean([s.attribute_reconstruction for s in scores]),
            "decision_accuracy": mean([1.0 if s.decision_correct else 0.0 for s in scores]),
            "post_state": mean([s.post_state for s in scores]),
            "exact_post_state": mean([1.0 if s.exact_post_state else 0.0 for s in scores])}
