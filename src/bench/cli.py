"""Command-line commands of the bench layer (mounted into ``req2test`` by harness.cli)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from bench import stopping
from bench.builder.pipeline import BuildError, BuildOptions, build_dataset
from bench.builder.schemata_stage import CHECKPOINT_DIR
from bench.cli_options import json_option, old_spelling, quiet_option, renamed, workers_option
from bench.console import console, out, progress_for
from bench.cores import per_core
from bench.dataset import DatasetError, load_dataset
from bench.formatting import num


def fail(message: str, code: int = 2) -> typer.Exit:
    # the message is text, not markup: "[tool.req2test]" in it must print as written
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def interrupted_line(exc: KeyboardInterrupt, judged: str) -> str:
    """The one line an interrupted resumable run ends with (``judged``: what its units are)."""
    from bench.stopping import Interrupted

    done = f": {exc.done} of {exc.total} {judged}" if isinstance(exc, Interrupted) else ""
    return f"interrupted{done}; run the same command again to resume"


def build(
    source: Annotated[str, typer.Argument(help="A BDD project directory (behave, cucumber-js, godog or Cucumber-JVM: "
                                        "found by its files), or a PyPI sdist spec NAME==VERSION (behave).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Dataset directory to create.")],
    workers: Annotated[int, workers_option("Warm runner processes")] = 0,
    runs: Annotated[int, typer.Option(help="Repetitions of each isolation/validation run.", min=1)] = 3,
    timeout: Annotated[float, typer.Option(help="Seconds one scenario run may take.", min=1)] = 120.0,
    shared_threshold: Annotated[float, typer.Option(
        help="Production code run by the When/Then steps of more than this share of instances is "
             "shared infrastructure and stays visible in target-hidden views.", min=0.0, max=1.0)] = 0.5,
    name: Annotated[str | None, typer.Option(help="Project name in instance ids (default: from the source).")] = None,
    install_deps: Annotated[bool, typer.Option(
        help="install the project's missing runtime dependencies into an environment of its own "
             "(cached by dependency set; req2test's own is never changed).")] = False,
    mutants: Annotated[bool, typer.Option(help="Generate mutants and record ground-truth kills (stage IV).")] = True,
    mutant_workers: Annotated[int, typer.Option(
        "--mutant-workers", min=0, metavar="N",
        help="godog and cucumber-jvm: mutant runs at a time (default: as --workers). Raise it for a suite "
             "whose runs mostly wait (servers, timers) and leave the cores idle.")] = 0,
    isolation: Annotated[str, typer.Option(help="auto | bwrap | none: run the tests under bubblewrap "
                                                "(no network, read-only production); auto uses it when installed.")] = "auto",
    force: Annotated[bool, typer.Option(help="Replace OUTPUT if it already holds a dataset.")] = False,
    sample: Annotated[int | None, typer.Option(
        min=1, metavar="N", help="Build a stated slice: N runnable scenarios drawn at random (--sample-seed); "
                                 "the others are excluded as not_in_sample.")] = None,
    sample_seed: Annotated[int, typer.Option(help="The seed of --sample's draw.")] = 0,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Build benchmark instances from a real BDD project.

    Parses every feature, runs each scenario alone (--runs times: in a warm in-process
    runner for behave, a process of its own for the others), records runtime step
    bindings, recovers and validates each scenario's test implementation (positive and
    negative workspaces), traces target interfaces, and writes an agent-visible
    instances.jsonl beside an evaluator-only gold/.

    Examples:

      req2test build examples/tinyshop -o datasets/tinyshop

      req2test build python-docx==1.2.0 -o datasets/python-docx --install-deps

      req2test build ../coddy-agent -o datasets/coddy --workers 2 --mutant-workers 6

      req2test build ../java-algorand-sdk -o datasets/java-algo --workers 2 --runs 1

      req2test build ../kapua-tag -o datasets/kapua-8 --sample 8 --runs 1
    """
    options = BuildOptions(runs=runs, timeout=timeout, shared_threshold=shared_threshold, name=name,
                           install_deps=install_deps, force=force, mutants=mutants, isolation=isolation,
                           mutant_workers=mutant_workers, sample=sample, sample_seed=sample_seed)
    if workers:
        options.workers = workers
    progress = progress_for(quiet)
    try:
        card = build_dataset(source, output, options, progress)
    except BuildError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        stopping.stop()  # nothing the build started is left running
        kept = output / CHECKPOINT_DIR / "mutant-runs"
        done = sum(1 for _ in kept.glob("*.json")) if kept.is_dir() else 0
        stage_runs = output / CHECKPOINT_DIR / "stage-runs"  # bench.builder.run_memo
        runs = sum(1 for _ in stage_runs.glob("*.pickle")) if stage_runs.is_dir() else 0
        what = ([f"the mutant runs of {done} instance(s)"] if done else []) + \
            ([f"{runs} isolation/validation run(s)"] if runs else [])
        if what:
            raise fail(f"interrupted; {', '.join(what)} are kept under {output}/: run the same command again to "
                       "resume", 130) from None
        raise fail("interrupted; no dataset was written", 130) from None
    finally:
        progress.close()
    if not quiet:
        console.print(f"built {output} in {sum(card.stage_seconds.values()):.1f}s")
    print_summary(output)
    print_exclusion_examples(card)


def summary(
    dataset: Annotated[Path, typer.Argument(help="A dataset directory written by `req2test build`.")],
    as_json: Annotated[bool, json_option("the dataset card")] = False,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Print a dataset's card: instances, exclusions with reasons, Table-2 statistics.

    Example:

      req2test summary datasets/tinyshop

      req2test summary datasets/tinyshop --json | jq .scored_instances
    """
    del quiet  # the card is all it prints (on stdout): -q is taken so a script can pass it to every command
    if as_json:
        try:
            data = load_dataset(dataset).card
        except DatasetError as exc:
            raise fail(str(exc)) from None
        out.print_json(json.dumps(data.model_dump(mode="json")))
        return
    print_summary(dataset)


def families_command(
    datasets: Annotated[list[Path], typer.Argument(help="Dataset directories written by `req2test build`.")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write DIR/<dataset directory>.txt: the ids of each dataset's instances of the "
                               "requirements every dataset has (an experiment's `instances: {file: ...}`).")] = None,
    scored: Annotated[bool, typer.Option("--scored", help="Only the cards' scored instances.")] = False,
    as_json: Annotated[bool, json_option("each dataset's families and the shared ones")] = False,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """The requirement families several datasets share: the same Gherkin scenario in other repositories
    (e.g. algorand-sdk-testing's in py-, js-, go- and java-algorand-sdk), matched by Feature title, scenario
    name and number of runnable rows, never by path. Prints each dataset's language and families, the shared
    families of each pair and of all; -o writes each dataset's instance ids of the requirements all share.

    Examples:

      req2test families datasets/py-algo datasets/go-algo datasets/java-algo

      req2test families datasets/py-algo datasets/go-algo -o shared/   # shared/py-algo.txt, shared/go-algo.txt
    """
    from bench.families import overlaps, unique_families

    names = [path.resolve().name for path in datasets]
    if len(set(names)) < len(names):
        raise fail("two dataset directories have the same name; the name labels each dataset")
    unique: dict[str, dict[str, str]] = {}
    order: dict[str, list[str]] = {}
    rows: list[dict] = []
    for name, path in zip(names, datasets):
        try:
            dataset = load_dataset(path)
        except DatasetError as exc:
            raise fail(str(exc)) from None
        scored_ids = set(dataset.card.scored_instances)
        instances = [i for i in dataset.instances if not scored or i.id in scored_ids]
        unique[name] = unique_families(instances)
        order[name] = [i.id for i in instances]
        grouped = dataset.families(scored_only=scored)
        rows.append({"dataset": name, "language": dataset.language, "instances": len(instances),
                     "families": len(grouped), "ambiguous": sum(1 for ids in grouped.values() if len(ids) > 1)})
    pairs = overlaps({name: keys for name, keys in unique.items()})
    if as_json:
        out.print_json(json.dumps({"datasets": rows, "shared": [{"datasets": list(members), "families": count}
                                                                for members, count in pairs]}))
    else:
        table = Table("dataset", "language", "instances", "families", "ambiguous", title="requirement families")
        for row in rows:
            table.add_row(escape(row["dataset"]), escape(row["language"]), str(row["instances"]), str(row["families"]),
                          str(row["ambiguous"]))
        out.print(table)
        shared = Table("datasets", "shared families", title="shared families (held twice: left out)")
        for members, count in pairs:
            shared.add_row(escape(" + ".join(members)), str(count))
        out.print(shared)
    if output is not None:
        common = set.intersection(*(set(keys) for keys in unique.values()))
        try:
            output.mkdir(parents=True, exist_ok=True)
            for name, keys in unique.items():
                wanted = {keys[k] for k in common}
                ids = [i for i in order[name] if i in wanted]  # dataset order
                (output / f"{name}.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
        except OSError as exc:
            raise fail(f"{output}: cannot write ({exc.strerror})") from None
        if not quiet:
            console.print(f"wrote {len(common)} instance ids per dataset to {output}/", highlight=False)


def evaluate_command(
    dataset: Annotated[Path, typer.Argument(help="A dataset directory written by `req2test build`.")],
    predictions: Annotated[Path, typer.Option("--predictions", "-p", help="predictions.jsonl: one prediction a line.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory (created; an existing one resumes).")],
    workers: Annotated[int, workers_option("Warm runner processes")] = 0,
    timeout: Annotated[float, typer.Option(help="Seconds the test may run (docs/evaluation.md: 600).", min=1)] = 600.0,
    instance: Annotated[list[str] | None, typer.Option("--instance", "-i", help="Evaluate only these ids (repeatable).")] = None,
    resamples: Annotated[int, typer.Option(help="Cluster-bootstrap resamples for the 95% CIs.", min=100)] = 2000,
    isolation: Annotated[str, typer.Option(help="auto | bwrap | none: run the tests under bubblewrap "
                                                "(no network, read-only production); auto uses it when installed.")] = "auto",
    replays: Annotated[int, typer.Option(help="Fresh-process replays of each KillComplete claim's kills "
                                              "(plus one clean replay); 0 turns the replays off.", min=0)] = 5,
    order_seed: Annotated[int | None, typer.Option(
        "--order-seed", help="Seed of the verdict runs' random order (default: fresh randomness, so a test cannot "
                             "learn the order).")] = None,
    old_seed: Annotated[int | None, old_spelling("--seed", "--order-seed")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 3 when an instance has no prediction or an "
                                                          "invalid one (they still score as generation failures).")]
    = False,
    as_json: Annotated[bool, json_option("the run's summary")] = False,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Score generated test implementations: stage outcome, API-call F1, coverage Jaccard,
    mutant-kill recall and KillComplete@1, with 95% cluster-bootstrap CIs.

    A prediction is one JSON object a line: {"instance_id": ..., "files": {path: content},
    "metadata": {...}} (see `req2test schema prediction`). Only files under the features
    directory are test code; a prediction that writes anything else is rejected.
    RUN_DIR/results.jsonl is an append-only journal: rerunning the same command on the
    same RUN_DIR resumes where it stopped.

    Examples:

      req2test evaluate datasets/tinyshop -p predictions.jsonl -o runs/mine

      req2test evaluate datasets/tinyshop -p predictions.jsonl -o runs/one --instance tinyshop/features/cart.feature:13

      req2test evaluate datasets/tinyshop -p predictions.jsonl -o runs/mine --strict   # exit 3 if any is missing

      req2test evaluate datasets/tinyshop -p predictions.jsonl -o runs/mine --json -q | jq .kill_complete_at_1
    """
    from bench.evaluate import EvaluateOptions, EvaluationError, evaluate

    if isolation not in ("auto", "bwrap", "none"):
        raise fail(f"--isolation must be auto, bwrap or none, not {isolation!r}")
    seed = renamed(order_seed, old_seed, "--seed", "--order-seed")
    options = EvaluateOptions(timeout=timeout, instances=instance or None, resamples=resamples, isolation=isolation,
                              replays=replays, seed=seed)
    if workers:
        options.workers = workers
    progress = progress_for(quiet)
    try:
        summary_data = evaluate(dataset, predictions, output, options, progress)
    except EvaluationError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt as exc:
        raise fail(interrupted_line(exc, "instances judged"), 130) from None
    finally:
        progress.close()
    print_run_summary(summary_data, title=str(output), as_json=as_json)
    if not report_submission(summary_data) and strict:
        raise typer.Exit(3)


def calibrate_command(
    dataset: Annotated[Path, typer.Argument(help="A dataset directory written by `req2test build`.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the oracle/empty/then-stripped runs.")],
    workers: Annotated[int, workers_option("Warm runner processes")] = 0,
    arm: Annotated[list[str] | None, typer.Option(
        "--arm", help="Run only this arm (oracle, empty, then-stripped); repeat for several. Default: all three.")] = None,
    order_seed: Annotated[int | None, typer.Option(
        "--order-seed", help="Seed of the verdict runs' random order (default: fresh randomness, so a test cannot "
                             "learn the order).")] = None,
    as_json: Annotated[bool, json_option("each arm's run summary (by arm)")] = False,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Evaluate three reference prediction sets made from the ground truth: oracle (must be
    100% kill-complete), empty (must kill nothing) and then-stripped (in between).

    Examples:

      req2test calibrate datasets/tinyshop -o runs/calibration

      req2test calibrate datasets/python-pptx -o runs/pptx --arm oracle --arm empty   # the two exact arms only
    """
    from bench.calibrate import CALIBRATIONS, calibrate, empty_arm_problem
    from bench.evaluate import EvaluateOptions, EvaluationError

    arms = tuple(dict.fromkeys(arm)) if arm else CALIBRATIONS
    unknown = [a for a in arms if a not in CALIBRATIONS]
    if unknown:
        raise fail(f"--arm {unknown[0]!r}: no such calibration arm (available: {', '.join(CALIBRATIONS)})")

    options = EvaluateOptions(seed=order_seed)
    if workers:
        options.workers = workers
    progress = progress_for(quiet)
    try:
        summaries = calibrate(dataset, output, options, progress, arms=arms)
    except EvaluationError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        raise fail(f"interrupted; finished instances are kept under {output}/, rerun to resume", 130) from None
    finally:
        progress.close()
    if as_json:  # one document: the arms' summaries by arm
        out.print_json(json.dumps(summaries))
    for name, data in summaries.items():
        if as_json:
            print_warnings(data)
        else:
            print_run_summary(data, title=f"{output}/{name}")
    problem = empty_arm_problem(output) if "empty" in arms else None
    if problem is not None:
        raise fail(problem, code=1)


def print_run_summary(data: dict, title: str, as_json: bool = False) -> None:
    """A run's summary on stdout: a table and its outcomes, or with ``as_json`` the summary itself; its
    warnings on stderr."""
    if as_json:
        out.print_json(json.dumps(data))
        print_warnings(data)
        return
    table = Table("metric", "value", "95% CI", "n", title=f"{title}  (N={data['n']}, N_exec={data['n_exec']})")
    for key in ("pass_at_1", "kill_complete_at_1", "kill_complete_relaxed_at_1", "api_f1", "coverage_jaccard",
                "mutant_recall", "assertion_dependent_recall", "hidden_recall"):
        metric = data[key]
        table.add_row(key, num(metric["value"]), "—" if metric["ci_low"] is None
                      else f"[{metric['ci_low']:.3f}, {metric['ci_high']:.3f}]", str(metric["n"]))
    out.print(table)
    print_warnings(data)
    out.print("outcomes: " + ", ".join(f"{k} {v}" for k, v in data["outcomes"].items() if v))
    if data["exclusions"]:
        out.print("excluded (infrastructure): " + ", ".join(f"{k} {v}" for k, v in data["exclusions"].items()))


def print_warnings(data: dict) -> None:
    for warning in data.get("warnings") or []:
        console.print(f"[yellow]note:[/] {escape(warning)}", highlight=False, soft_wrap=True)


def report_submission(data: dict) -> bool:
    """Print what was submitted (stderr) when anything is missing or invalid; True when complete."""
    from bench.model import SubmissionReport

    if data.get("submission") is None:
        return True
    report = SubmissionReport.model_validate(data["submission"])
    if report.complete:
        return True
    console.print(f"[yellow]submission:[/] {report.instances} instance(s): {report.submitted} submitted "
                  f"({report.valid} valid, {report.invalid} invalid), {report.missing} missing; invalid and "
                  "missing ones score as generation_failure", highlight=False, soft_wrap=True)
    shown = 5
    for instance_id, reason in list(report.invalid_reasons.items())[:shown]:
        console.print(f"  invalid {escape(instance_id)}: {escape(reason)}", highlight=False, soft_wrap=True)
    if report.invalid > shown:
        console.print(f"  … {report.invalid - shown} more invalid (summary.json: submission.invalid_reasons)", soft_wrap=True)
    if report.missing:
        listed = ", ".join(report.missing_ids[:shown]) + (" …" if report.missing > shown else "")
        console.print(f"  missing: {escape(listed)}", highlight=False, soft_wrap=True)
    return False


def schema(
    name: Annotated[str, typer.Argument(help="prediction, result, summary, instance, gold or dataset-card.")],
) -> None:
    """Print the JSON Schema of one of the dataset's record types.

    Example:

      req2test schema instance > instance.schema.json
    """
    from bench.schema import SCHEMAS
    from bench.schema import schema as make_schema

    if name not in SCHEMAS:
        raise fail(f"unknown schema {name!r}; choose one of: {', '.join(SCHEMAS)}")
    out.print_json(json.dumps(make_schema(name)))


def history(
    repo: Annotated[Path, typer.Argument(help="A git repository (a work tree or a bare mirror).")],
    features: Annotated[str, typer.Option("--features", help="Its features directory.")] = "features",
    end: Annotated[str, typer.Option("--end", help="The last commit to replay.")] = "HEAD",
    at: Annotated[str | None, typer.Option("--at", help="Also list the live atoms at this commit.")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the replay (every event) as JSON.")] = None,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Replay a repository's history of requirement atoms (scenarios): added, changed,
    removed, deferred and resumed, with commit and changelog evidence (seed 001).

    Example:

      req2test history ../python-docx --features features --at v1.2.0 -o runs/docx-history.json
    """
    from collections import Counter

    from bench.history.atoms import gold_state, replay_history

    if not repo.exists():
        raise fail(f"{repo}: no such directory")
    try:
        replay = replay_history(repo, features, end)
        state = gold_state(replay, _resolve_commit(repo, at)) if at else None
    except (RuntimeError, ValueError) as exc:
        raise fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    kinds = Counter(e.kind for e in replay.events)
    table = Table(title=f"{repo} ({features}/): {len(replay.commits)} commits, {len(replay.atom_ids)} atoms")
    for column in ("added", "changed", "removed", "deferred", "resumed", "unparsable versions"):
        table.add_column(column, justify="right")
    table.add_row(*[str(kinds.get(k, 0)) for k in ("added", "changed", "removed", "deferred", "resumed")],
                  str(len(replay.parse_failures)))
    out.print(table)
    if state is not None:
        out.print(f"live at {state.commit[:12]}: {len(state.atoms)} atoms, "
                  f"{sum(a.deferred for a in state.atoms)} deferred, {len(state.unparsable)} unparsable files")
        for atom in state.atoms:
            out.print(f"  {atom.atom_id}{'  (deferred)' if atom.deferred else ''}", highlight=False, markup=False)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(replay.model_dump_json(indent=1), encoding="utf-8")
        if not quiet:
            console.print(f"wrote {output}")


def takeover(
    repo: Annotated[Path, typer.Argument(help="A git repository (a work tree or a bare mirror).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Takeover directory to create.")],
    commit: Annotated[list[str] | None, typer.Option("--commit", help="A target commit (sha or prefix); repeat it.")] = None,
    select: Annotated[int, typer.Option("--select", min=0, help="Otherwise: the last N candidate commits (add, change or "
                                                               "resume a scenario and touch production code).")] = 0,
    name: Annotated[str | None, typer.Option("--name", help="Project name in target ids (default: the repository's).")] = None,
    features: Annotated[str, typer.Option("--features", help="Its features directory.")] = "features",
    production: Annotated[list[str] | None, typer.Option("--production", help="Production path prefixes for --select "
                                                                              "(default: src, and the name).")] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="Top-level paths not written into the trees "
                                                                        "(e.g. docs).")] = None,
    workers: Annotated[int, workers_option("Warm runner processes of each build")] = 0,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Build takeover targets from a project's history (seed 001, ReqMemBench): at each commit that makes
    scenarios pass, the parent's tree for the agent, a dataset built at the commit for the judge,
    the request (its message), the history before it and the gold requirement states.

    Examples:

      req2test takeover ../python-docx -o datasets/docx-takeover --commit 6c0024c5 --commit 8ac9fc4f --exclude ref --exclude docs

      req2test takeover ../python-docx -o datasets/docx-takeover --select 5 --production src/docx
    """
    from bench.history.atoms import replay_history
    from bench.history.takeover import TakeoverError, build_takeover, candidate_commits
    from bench.history.trees import TreeError

    if not repo.exists():
        raise fail(f"{repo}: no such directory")
    if not commit and not select:
        raise fail("give the target commits (--commit SHA, repeatable) or --select N")
    project = name or repo.resolve().name.removesuffix(".git").split("+")[-1]
    if project == "repo":
        project = repo.resolve().parent.name.split("+")[-1]
    try:
        replay = replay_history(repo, features)
        chosen = list(commit or [])
        if select:
            prefixes = production or ["src", project.replace("-", "_"), project.split("-")[-1]]
            chosen += candidate_commits(replay, repo, prefixes)[-select:]
        progress = progress_for(quiet)
        try:
            card = build_takeover(repo, output, chosen, project, features, tuple(exclude or ()), per_core(workers),
                                  progress, replay=replay)
        finally:
            progress.close()
    except (TakeoverError, TreeError, RuntimeError, ValueError) as exc:
        raise fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    table = Table(title=f"{output}: {len(card.targets)} takeover targets ({len(card.dropped)} commits dropped)")
    for column in ("target", "seconds"):
        table.add_column(column)
    for target_id in card.targets:
        table.add_row(target_id, str(card.seconds.get(target_id, "")))
    out.print(table)
    for dropped in card.dropped:
        out.print(f"dropped {dropped.commit[:12]}: {dropped.reason}", highlight=False, markup=False)
    if card.missing_blobs:
        out.print(f"{len(card.missing_blobs)} files the repository lacks were not written "
                  f"(e.g. {card.missing_blobs[0]})", highlight=False, markup=False)


def suites(
    dataset: Annotated[Path, typer.Argument(help="A dataset directory written by `req2test build`.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the suite instances as JSON lines.")] = None,
    max_unrelated: Annotated[float, typer.Option("--max-unrelated", min=0.0, max=1.0,
                                                 help="Drop a target mutant more than this share of other features' scenarios kill.")] = 0.2,
    per_feature: Annotated[int, typer.Option("--per-feature", min=0, help="Target tests per feature at most.")] = 6,
    documentation: Annotated[Path | None, typer.Option(
        "--documentation", help="Write each suite's documentation page (the documentation ablation's input, "
                                "bench.suite.authored) as DIR/<project>/<feature>.md.")] = None,
    as_json: Annotated[bool, json_option("each suite's row")] = False,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """The suite instances of a dataset (one per feature file, seed 002) with their
    requirement-targeted mutants.

    Examples:

      req2test suites datasets/py-algorand-sdk -o datasets/py-algorand-sdk-suites.jsonl

      req2test suites datasets/python-docx --documentation docs-pages/   # for an agent run elsewhere
    """
    from bench.suite.authored import suite_documentation
    from bench.suite.instances import suite_instances

    try:
        loaded = load_dataset(dataset)
        found = suite_instances(loaded, max_unrelated_share=max_unrelated, max_targets_per_feature=per_feature)
    except DatasetError as exc:
        raise fail(str(exc)) from None
    pages = {s.id: suite_documentation(loaded, s) for s in found}
    rows: list[dict[str, Any]] = [
        {"id": suite.id, "feature": suite.feature_file, "scenarios": len(suite.scenarios),
         "words": suite.specification_words, "doc_words": pages[suite.id].words,
         "step_defs": len(suite.reference_step_definitions), "candidates": suite.candidates,
         "dropped": suite.dropped, "targets": len(suite.targets)} for suite in found]
    if as_json:
        out.print_json(json.dumps(rows))
    else:
        table = Table(title=f"{dataset}: {len(found)} suite instances, "
                            f"{sum(len(s.targets) for s in found)} targeted mutants")
        for column in ("feature", "scenarios", "words", "doc words", "step defs", "candidates", "dropped", "targets"):
            table.add_column(column, justify="left" if column == "feature" else "right", overflow="fold")
        for row in rows:
            table.add_row(escape(row["feature"]), *(str(row[k]) for k in ("scenarios", "words", "doc_words",
                                                                          "step_defs", "candidates", "dropped",
                                                                          "targets")))
        out.print(table)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text("".join(s.model_dump_json() + "\n" for s in found), encoding="utf-8")
        if not quiet:
            console.print(f"wrote {output}")
    if documentation is not None:
        for suite in found:
            page = documentation / suite.project / f"{suite.feature_file}.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(pages[suite.id].text, encoding="utf-8")
        if not quiet:
            console.print(f"wrote {len(found)} documentation pages under {documentation}")


def _resolve_commit(repo: Path, name: str) -> str:
    """A tag or branch name as the full sha ``gold_state`` looks up."""
    import subprocess

    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--end-of-options", f"{name}^{{commit}}"],
                           capture_output=True, text=True, check=False)
    if found.returncode != 0:
        raise ValueError(f"{name}: not a commit of {repo}")
    return found.stdout.strip()


def print_exclusion_examples(card) -> None:
    """Per exclusion reason: how many, and the first error of one example (the first with a detail)."""
    by_reason: dict[str, list] = {}
    for exclusion in card.exclusions:
        by_reason.setdefault(exclusion.reason, []).append(exclusion)
    if not by_reason:
        return
    out.print("why excluded (one example each):")
    for reason, items in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        scenarios = sum(1 for e in items if _is_scenario(e.id))
        count = ", ".join(part for part in (
            f"{scenarios} scenario{'s' if scenarios != 1 else ''}" if scenarios else "",
            f"{len(items) - scenarios} feature{'s' if len(items) - scenarios != 1 else ''}"
            if len(items) - scenarios else "") if part)
        example = next((e for e in items if e.detail), items[0])
        where = example.id.split("/", 1)[1] if "/" in example.id else example.id
        line = f"  {reason} ({count}), e.g. {where}" + (f": {example.detail}" if example.detail else "")
        out.print(escape(line), highlight=False, soft_wrap=True)


def _is_scenario(instance_id: str) -> bool:
    return instance_id.rpartition(":")[2].isdigit()


def print_summary(dataset_dir: Path) -> None:
    try:
        dataset = load_dataset(dataset_dir)
    except DatasetError as exc:
        raise fail(str(exc)) from None
    card = dataset.card
    for project in card.projects:
        out.print(f"[bold]{project.name} {project.version}[/]  ({project.source}, sha256 {project.source_sha256[:12]}…)")
        out.print(f"  features: {project.features_total}   scenarios: {project.scenarios_total}   "
                  f"instances: {project.instances}   groups (scored): {project.groups}")
        levels = ", ".join(f"{k} {v}" for k, v in project.test_levels.items()) or "-"
        out.print(f"  test levels: {levels}   depends_on pairs: {project.depends_on_pairs}   "
                  f"variant_of pairs: {project.variant_of_pairs}   empty target interfaces: "
                  f"{project.empty_interface_instances}")
        if project.exclusions:
            out.print("  excluded: " + ", ".join(f"{k} {v}" for k, v in project.exclusions.items()))
        table = Table("statistic", "min", "max", "mean", "total", title="per instance (Table 2)")
        for key, stat in project.statistics.items():
            table.add_row(key, f"{stat.min:g}", f"{stat.max:g}", f"{stat.mean:g}", f"{stat.total:g}")
        out.print(table)
    if card.mutation:
        m = card.mutation
        out.print(f"  mutants: {m['mutants']} ({', '.join(f'{k} {v}' for k, v in m['mutants_per_operator'].items())})")
        out.print(f"  mean pool {m['mean_pool_size']}, mean ground-truth kills {m['mean_ground_truth_kills']}, "
                  f"mean assertion-dependent kills {m['mean_assertion_dependent_kills']}, scorable instances "
                  f"{m['scorable_instances']}"
                  # behave's: mutants of code that runs at import need a fresh process
                  + (f", import-time mutant runs {m['fresh_process_fallbacks']}" if "fresh_process_fallbacks" in m
                     else ""))
        if m.get("infrastructure_kills"):
            out.print(f"  infrastructure kills (the empty test detects them; not kills of any test): "
                      f"{m['infrastructure_kills']} on {m['instances_with_infrastructure_kills']} instance(s)")
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in card.stage_seconds.items())
    out.print(f"stage times: {stages}")
