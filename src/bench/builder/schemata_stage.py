"""What the mutant stages of the compiled frameworks (godog, Cucumber-JVM) share: one run per
(row, mutant) selected from a schemata build, so they judge each instance the same way and
record the same things.

- ``rows_covering``: a mutant runs only in the rows whose clean run reached one of its lines;
- ``row_timeout``: what a mutant's row run may take;
- ``InstanceRuns``: what judging one instance found (ground-truth verdicts, the empty test's
  infrastructure kills, the then-stripped test's kills);
- ``gold_updates``/``stage_summary``: the gold records and the card's summary from those;
- ``fresh_check``: a sample of the verdicts replayed through the framework's reference run
  (``Framework.fresh_run``: a plain rebuild with the mutant on disk, fresh processes).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from pydantic import TypeAdapter

from bench import stopping
from bench.builder.stats import mutation_statistics
from bench.judging import RunVerdict
from bench.model import GoldTest, Instance, Mutant, StepDefRef
from bench.mutation.executor import INFRASTRUCTURE
from bench.progress import Progress
from bench.runlog import instance_file_name

FRESH_SAMPLE = 64  # (instance, mutant) pairs replayed by the reference run, half of them kills
MIN_TIMEOUT = 5.0  # seconds a mutant row run gets at least (a looping mutant costs this much: on
# coddy-agent timeouts were a fifth of the mutant stage at 10 s, while its scenarios run in 0.02-0.3 s) ...
TIMEOUT_FACTOR = 20.0  # ... or this many times the row's clean run

RowCoverage = dict[int, dict[str, set[int]] | None]  # row line -> its clean run's covered lines (None: unknown)


def rows_covering(coverage: RowCoverage, mutant: Mutant) -> list[int]:
    """The rows whose clean run executed a line of ``mutant``: the only rows it can change. A run
    does not reach a line it did not cover with the original code unless something before it
    differs, and nothing before it does (coverage-based test selection, as PIT's). A row without
    coverage always runs."""
    wanted = set(mutant.lines)
    return [line for line, lines in coverage.items() if lines is None or wanted & lines.get(mutant.file, set())]


def rows_to_run(coverage: RowCoverage, mutant: Mutant) -> list[int] | None:
    """The rows a judge runs ``mutant`` in: those whose traced run reached its lines, or every row
    (None) when none did. One traced run is no proof of what another run reaches: code a goroutine
    or another thread runs is covered in one run and not the next (the same coddy-agent oracle of
    ``cli_remote.feature:6``, a TUI, covered 99.7 % of the builder's lines in one judge's trace and
    100 % in the next), and a kill on a line one trace missed was recorded as survived without a
    run. A prediction that hides its coverage neither gains nor loses a run by it."""
    return rows_covering(coverage, mutant) or None


UNREACHED_SAMPLE = 8  # kills no traced row reached that a judge runs before it runs the others


@dataclass(frozen=True)
class KillPlan:
    """The order in which a judge runs an instance's kills (``kill_plan``)."""

    now: list[str]  # run first: every kill some traced row reached, and the sampled unreached ones
    sampled: frozenset[str]  # the unreached kills among ``now``
    held: list[str]  # unreached kills run only when a sampled one fails

    def rest(self, claimed: set[str]) -> list[str]:
        """The held kills to run once the first pass claimed ``claimed``: every one of them when
        a sampled kill failed (the trace did not show this test's reach), none otherwise."""
        return self.held if claimed & self.sampled else []

    def run(self, plan: list[str], claimed: set[str], kill: Callable[[str], None],
            variant: Callable[[str], bool]) -> list[str]:
        """Run ``plan`` in its order — ``variant`` runs an item that is no kill (a null variant, a
        decoy) and says so, ``kill`` runs a kill and adds it to ``claimed`` when it fails —
        then the held kills if ``rest`` says so. Returns the held kills that ran."""
        for item in plan:
            if not variant(item):
                kill(item)
        held = self.rest(claimed)
        for item in held:
            kill(item)
        return held

    def record(self, rest: list[str]) -> dict[str, int]:
        """What a judgement's ``confirmation`` says of it, ``rest`` being what ``rest`` gave."""
        return {"unreached_kills": len(self.sampled) + len(self.held), "unreached_not_run": len(self.held) - len(rest)}


def kill_plan(kills: list[str], coverage: RowCoverage, mutants: dict[str, Mutant], rng: random.Random) -> KillPlan:
    """Which kills a judge runs at once and which it holds back.

    A kill on lines no row of the prediction's traced run executed runs in every row
    (``rows_to_run``): one trace does not prove what another run reaches (goroutines, threads).
    Running all of them costs a fresh process each even for a test that reaches nothing (an
    empty test on a Java instance: ~450 JVMs). So when more than ``UNREACHED_SAMPLE`` kills are
    unreached, a random sample of that many runs with the rest; only if one of them fails do the
    others run too, since then the trace did not show this test's reach.

    Holding a kill back can only take a kill away from a prediction, never add one: a test that
    hides its reach from the traced run (it can tell that run apart) loses the kills the sample
    does not catch. An honest test loses one only when its path differs from its traced run's
    on more than ``UNREACHED_SAMPLE`` unreached kills and none of the sample is among them."""
    unreached = [m for m in kills if not rows_covering(coverage, mutants[m])]
    if len(unreached) <= UNREACHED_SAMPLE:
        return KillPlan(now=list(kills), sampled=frozenset(unreached), held=[])
    sampled = frozenset(rng.sample(sorted(unreached), UNREACHED_SAMPLE))
    held = [m for m in unreached if m not in sampled]
    waiting = set(held)
    return KillPlan(now=[m for m in kills if m not in waiting], sampled=sampled, held=held)


def row_timeout(record: GoldTest, cap: float) -> float:
    return min(cap, max(MIN_TIMEOUT, TIMEOUT_FACTOR * record.runtime_seconds))


UNSTABLE = "unstable"  # killed once, not when the run was repeated: the pair is excluded
# the mutant's kill did not repeat in another scenario's runs: a racy mutant, its pair excluded here too
RACY = "unstable in another scenario"
EXCLUDED_VERDICTS = INFRASTRUCTURE | {UNSTABLE}


def confirmed_kills(verdicts: dict[str, str], rerun: Callable[[list[str]], dict[str, Any]],
                    rounds: int = 1) -> dict[str, str]:
    """The kills of ``verdicts`` that are not repeated in each of ``rounds`` more runs
    (``rerun``), as ``UNSTABLE``; a round runs only the kills every earlier round repeated.

    The scenario's clean runs passed in isolation, but a test that fails once in a few dozen
    runs (timing, a loaded machine) turns as many survivors into kills over a pool of a thousand
    mutants; a kill that happens twice in a row is a false one only with the square of that
    chance. The coddy-agent chunk that showed it: 2 of 32 sampled kills did not reproduce in a
    fresh process, one of them an equivalent mutant. A *racy* mutant (one that kills with
    probability p, such as a zero timeout that may or may not beat a task to its end) gets in
    with p ** (rounds + 1) and then costs a correct prediction its kill-completeness with
    1 - p: more rounds make that rarer, none makes it impossible (docs/frameworks.md)."""
    unstable: dict[str, str] = {}
    standing = sorted(m for m, v in verdicts.items() if v == RunVerdict.killed)
    for _ in range(rounds):
        if not standing:
            break
        again = rerun(standing)
        unstable.update({m: UNSTABLE for m in standing if str(again[m]) != RunVerdict.killed})
        standing = [m for m in standing if m not in unstable]
    return unstable


@dataclass
class InstanceRuns:
    """What the mutant stage found for one instance."""

    clean_passed: bool = False
    verdicts: dict[str, str] = field(default_factory=dict)  # mutant id -> the ground truth's verdict
    infrastructure: set[str] = field(default_factory=set)  # kills the empty test makes too
    empty_not_passing: bool = False
    stripped: set[str] | None = None  # kills the then-stripped test still makes (None: not run)
    stripped_not_passing: bool = False
    stripped_targets: list[StepDefRef] = field(default_factory=list)
    runs: int = 0
    build_failures: list[str] = field(default_factory=list)


CHECKPOINT_DIR = ".req2test-checkpoint"  # inside the output directory while a build is under way
CHECKPOINT_VERSION = 1  # raise when what an InstanceRuns means changes
KEYED_FIELDS = {"instance_id", "closure", "step_definitions", "bindings", "covered_lines", "data_files"}


class RunsCheckpoint:
    """The instances a mutant stage has finished, kept on disk so that a build killed part-way
    (a session's end, Ctrl-C, a lost machine) resumes where it stopped: the same command again
    redoes the cheap stages and skips every instance already judged. An instance is reused only
    under the same key: the project's content hash, the instance's test (closure, step definitions,
    bindings, covered lines, data files), its pool and its rows' coverage, and the stage's timeout
    rule; anything else is judged again."""

    def __init__(self, directory: Path | None, project_sha256: str, rule: str = "") -> None:
        self.directory = directory
        self.project_sha256 = project_sha256
        self.rule = rule  # how the framework's stage decides a verdict (godog: "kills confirmed")
        self.reused = 0

    def key(self, record: GoldTest, pool: list[Mutant], coverage: RowCoverage | None) -> str:
        cover = {str(line): (None if lines is None else {f: sorted(v) for f, v in sorted(lines.items())})
                 for line, lines in sorted((coverage or {}).items())}
        material = json.dumps({"version": CHECKPOINT_VERSION, "project": self.project_sha256,
                               # what decides the verdicts, not the run times a rebuild measures anew
                               "record": record.model_dump(mode="json", include=KEYED_FIELDS),
                               "pool": [m.model_dump(mode="json") for m in pool],
                               "coverage": cover, "timeouts": [MIN_TIMEOUT, TIMEOUT_FACTOR],
                               **({"rule": self.rule} if self.rule else {})}, sort_keys=True)
        return hashlib.sha256(material.encode()).hexdigest()

    def _path(self, instance_id: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / (instance_file_name(instance_id) + ".json")

    def load(self, instance_id: str, key: str) -> InstanceRuns | None:
        path = self._path(instance_id)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") != key:
                return None
            found = _RUNS.validate_python(data["runs"])
        except (ValueError, KeyError, TypeError):
            return None  # a file cut by a kill mid-write, or of another version: judge again
        self.reused += 1
        return found

    def save(self, instance_id: str, key: str, runs: InstanceRuns) -> None:
        path = self._path(instance_id)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps({"key": key, "runs": _RUNS.dump_python(runs, mode="json")}), encoding="utf-8")
        os.replace(partial, path)  # never half a file under the real name

    def judged(self, judge: Callable[[Instance], InstanceRuns], records: dict[str, GoldTest],
               pools: dict[str, list[Mutant]], coverage: dict[str, RowCoverage],
               progress: Progress) -> Callable[[Instance], InstanceRuns]:
        """``judge`` that first looks for the instance here and saves what it judged."""

        def judge_or_reuse(inst: Instance) -> InstanceRuns:
            key = self.key(records[inst.id], pools[inst.id], coverage.get(inst.id))
            found = self.load(inst.id, key)
            if found is not None:
                progress.advance()
                return found
            result = judge(inst)
            if stopping.requested():  # an interrupt killed its runs midway: judged by nobody, not saved
                raise KeyboardInterrupt
            self.save(inst.id, key, result)
            return result

        return judge_or_reuse


class RankedRuns:
    """``slots`` threads that run the runs of every instance being judged, the runs of the
    instance judged first before any other's. With instances as the only unit of parallelism, the
    last instance ran alone on one slot while the others idled (coddy-agent chunk A: its largest
    instance's runs, one at a time, for the last 31 of the stage's 77 minutes); here an instance's runs spread
    over every free slot, instances finish in order (so an interrupt keeps more of them), and the
    runs of the instances after it fill the slots while it compiles its next test program.

    ``map`` is called from an instance's thread, whose rank ``judge_instances`` sets; the slots end
    when the ``with`` block that made them does."""

    def __init__(self, slots: int) -> None:
        self._queue: queue.PriorityQueue[tuple[float, int, Any]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._local = threading.local()
        self._threads = [threading.Thread(target=self._work, daemon=True, name=f"mutant-run-{n}")
                         for n in range(max(1, slots))]
        for thread in self._threads:
            thread.start()

    def rank(self, rank: int) -> None:
        self._local.rank = rank

    def map(self, run: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        """``run`` over ``items`` on the slots, in order; the first exception is raised (after an
        interrupt: ``KeyboardInterrupt``, no new run having started)."""
        rank = getattr(self._local, "rank", 0)
        futures: list[Future[Any]] = []
        for item in items:
            future: Future[Any] = Future()
            self._queue.put((rank, next(self._order), (run, item, future)))
            futures.append(future)
        return [stopping.result(future) for future in futures]

    def _work(self) -> None:
        while True:
            _, _, job = self._queue.get()
            if job is None:
                return
            run, item, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                stopping.check()  # interrupted: no new process
                future.set_result(run(item))
            except BaseException as exc:  # noqa: BLE001 - handed to the instance's thread as it is
                future.set_exception(exc)

    def close(self) -> None:
        for _ in self._threads:
            self._queue.put((float("inf"), next(self._order), None))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def judge_instances(judge: Callable[[Instance], InstanceRuns], instances: list[Instance], records: dict[str, GoldTest],
                    pools: dict[str, list[Mutant]], coverage: dict[str, RowCoverage], workers: int,
                    progress: Progress, checkpoint: RunsCheckpoint | None,
                    ranked: RankedRuns | None = None) -> dict[str, InstanceRuns]:
    """``judge`` over ``instances``, ``workers`` at a time, the largest pools first (the slots end
    together), each saved to and reused from ``checkpoint``. With ``ranked``, whose slots the judge
    runs its runs on, each instance's thread gets its rank in that order. An interrupt ends the
    runs in flight and keeps what the checkpoint saved (``stopping.StoppablePool``)."""
    order = sorted(instances, key=lambda i: -len(pools[i.id]))
    judged = judge if checkpoint is None else checkpoint.judged(judge, records, pools, coverage, progress)

    def ranked_judge(rank: int, inst: Instance) -> InstanceRuns:
        if ranked is not None:
            ranked.rank(rank)
        return judged(inst)

    with stopping.StoppablePool(max_workers=max(1, workers)) as pool:
        futures = [(i.id, pool.submit(ranked_judge, rank, i)) for rank, i in enumerate(order)]
        return {instance_id: stopping.result(future) for instance_id, future in futures}


def checkpoint_for(out_dir: Path, project_sha256: str, rule: str = "") -> RunsCheckpoint:
    return RunsCheckpoint(Path(out_dir) / CHECKPOINT_DIR / "mutant-runs", project_sha256, rule)


_RUNS = TypeAdapter(InstanceRuns)  # an instance's runs as JSON and back (sets as lists)


def stripped_targets(record: GoldTest, files: dict[str, dict[str, str]]) -> list[StepDefRef]:
    """The instance's Then step definitions whose files the then-stripped test changed."""
    changed = {rel for rel, text in files["then-stripped"].items() if text != files["oracle"].get(rel)}
    refs = {b.binding.key: b.binding for b in record.bindings if b.role == "then" and b.binding.file in changed}
    return [refs[k] for k in sorted(refs)]


def gold_updates(instances: list[Instance], gold: dict[str, GoldTest], pools: dict[str, list[Mutant]],
                 results: dict[str, InstanceRuns], by_id: dict[str, Mutant]) -> dict[str, GoldTest]:
    """Each instance's gold record with its pool, kills and their subsets.

    A mutant whose kill did not repeat in one scenario (``UNSTABLE``) is *racy*, and its kills in
    every other scenario are excluded too (``RACY``): whether a zero timeout beats a task to its end
    is the mutant's property, not the scenario's, and the evidence of all scenarios together finds
    it where a few runs of one cannot. coddy-agent's background-task features: 2 of the 3 kills an
    oracle missed after two runs in a row were of mutants another scenario had found unstable."""
    racy = {m for r in results.values() if r.clean_passed for m, v in r.verdicts.items() if v == UNSTABLE}
    updated: dict[str, GoldTest] = {}
    for inst in instances:
        result = results[inst.id]
        kills = {m for m, v in result.verdicts.items() if v == RunVerdict.killed} if result.clean_passed else set()
        kills -= result.infrastructure
        racy_here = kills & racy
        kills -= racy_here
        dependent = sorted(kills - result.stripped) if result.stripped is not None else []
        hidden = [(h.file, h.def_line, h.body_end) for h in inst.view.target_hidden]
        updated[inst.id] = gold[inst.id].model_copy(update={
            "pool": sorted(m.id for m in pools[inst.id]),
            "kills": sorted(kills),
            "excluded_mutants": dict(sorted({**{m: v for m, v in result.verdicts.items() if v in EXCLUDED_VERDICTS},
                                             **{m: RACY for m in racy_here}}.items())),
            "assertion_dependent": dependent,
            "hidden_kills": sorted(k for k in kills if any(by_id[k].file == f and a <= by_id[k].line <= b
                                                           for f, a, b in hidden)),
            "then_stripped_targets": result.stripped_targets if result.stripped is not None else [],
            "infrastructure_kills": sorted(result.infrastructure),
        })
    return updated


def stage_summary(generator: str, generated: int, mutated_files: int, mutants: list[Mutant],
                  instances: list[Instance], updated: dict[str, GoldTest], results: dict[str, InstanceRuns],
                  schemata: Any, **extra: Any) -> dict[str, Any]:
    """The card's mutation summary (``schemata``: the build's ``dropped``, ``builds``, ``seconds``)."""
    verdicts = Counter(v for r in results.values() for v in r.verdicts.values())
    return {
        "generator": generator,
        "mutants_generated": generated,
        "mutated_files": mutated_files,
        **mutation_statistics(mutants, instances, updated),
        "mutants_dropped_by_compiler": len(schemata.dropped),
        "schemata_builds": schemata.builds,
        "schemata_seconds": round(schemata.seconds, 1),
        "infrastructure_kills": sum(len(r.infrastructure) for r in results.values()),
        "instances_with_infrastructure_kills": sum(1 for r in results.values() if r.infrastructure),
        "empty_test_not_passing": sum(1 for r in results.values() if r.empty_not_passing),
        "then_stripped_not_passing": sum(1 for r in results.values() if r.stripped_not_passing),
        "schemata_clean_not_passing": sorted(i for i, r in results.items() if not r.clean_passed),
        "ground_truth_verdicts": dict(sorted(verdicts.items())),
        "kills_excluded_as_racy": sum(1 for g in updated.values() for v in g.excluded_mutants.values() if v == RACY),
        "runs": sum(r.runs for r in results.values()),
        "build_failures": [f for r in results.values() for f in r.build_failures][:20],
        **extra,
    }


def fresh_check(framework: Any, root: Path, instances: list[Instance], gold: dict[str, GoldTest],
                mutants: dict[str, Mutant], timeout: float, workers: int, progress: Progress,
                timeout_of: Callable[[GoldTest, float], float] = row_timeout) -> dict[str, Any]:
    """Replay a sample of the schemata verdicts through ``framework.fresh_run`` on ``root``."""
    rng = random.Random(0)
    kills = [(i, m) for i in instances for m in gold[i.id].kills]
    survivors = [(i, m) for i in instances for m in gold[i.id].pool
                 if m not in gold[i.id].kills and m not in gold[i.id].excluded_mutants
                 and m not in gold[i.id].infrastructure_kills]
    sample = rng.sample(kills, min(len(kills), FRESH_SAMPLE // 2))
    sample += rng.sample(survivors, min(len(survivors), FRESH_SAMPLE - len(sample)))
    progress.stage(f"fresh-process check ({len(sample)} pairs, a plain rebuild each)", len(sample))

    def replay(pair: tuple[Instance, str]) -> tuple[str, str, str]:
        inst, mutant_id = pair
        req = inst.requirement
        fresh = framework.fresh_run(root, [], req.feature_file, req.run_lines, mutants[mutant_id],
                                    timeout_of(gold[inst.id], timeout), "")
        expected = "killed" if mutant_id in gold[inst.id].kills else "survived"
        progress.advance()
        return inst.id, mutant_id, f"{expected}/{fresh.verdict}"

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        outcomes = list(pool.map(replay, sample))
    disagreements = [f"{i} {m}: schemata/fresh = {v}" for i, m, v in outcomes if v.split("/")[0] != v.split("/")[1]]
    return {"sampled": len(outcomes), "kills_sampled": sum(1 for *_, v in outcomes if v.startswith("killed")),
            "agree": len(outcomes) - len(disagreements), "disagreements": disagreements,
            "seconds": round(time.perf_counter() - started, 1)}


__all__ = [
    "EXCLUDED_VERDICTS",
    "FRESH_SAMPLE",
    "MIN_TIMEOUT",
    "RACY",
    "TIMEOUT_FACTOR",
    "UNREACHED_SAMPLE",
    "UNSTABLE",
    "InstanceRuns",
    "KillPlan",
    "RankedRuns",
    "RowCoverage",
    "confirmed_kills",
    "fresh_check",
    "gold_updates",
    "judge_instances",
    "kill_plan",
    "row_timeout",
    "rows_covering",
    "rows_to_run",
    "stage_summary",
    "stripped_targets",
]
