"""Load scored configurations from run directories (what ``report`` and ``compare`` read).

Two layouts are accepted (notes/issue6-layout.md):

- an experiment run ``RUN/configs/<config>/`` with config.json, results.jsonl and the
  predictions.jsonl beside (names may contain ``@`` and ``/``; config.json's ``name`` wins
  over the directory path, so nested or ``~``-escaped directory names both work);
- a plain ``req2test evaluate`` run dir (results.jsonl, summary.json, run.json): one
  configuration named after the directory;
- a directory of evaluate run dirs (``req2test calibrate -o DIR``): one configuration per child.

A configuration is selected on the command line as ``RUN:CONFIG``. Several runs read together
(``load_runs``: e.g. one experiment per dataset, reported side by side) name each configuration
``RUN:CONFIG`` after its run directory. ``bench.runlog`` is the public, documented face of these loaders
(``read_run``: the configurations in the experiment's arm order, with its baseline).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.errors import UserError
from bench.journal import Journal, JournalError
from bench.model import GenerationMetadata, InstanceResult, Prediction, RunSummary


class RunsError(UserError):
    """A user-facing problem with a run directory or a selection; one line."""


class ConfigRecord(BaseModel):
    """config.json of one reported configuration. Absent fields take defaults (derived from the name
    where the name says it: ``arm@view``, ``arm@view/single``, ``arm@view/<selector>``)."""

    model_config = ConfigDict(extra="allow")

    name: str
    arm: str = ""
    view: Literal["th", "ah"] | None = None
    epoch: int | None = Field(None, description="1-based replicate when the experiment ran several epochs")
    role: Literal["arm", "single", "selector"] = "arm"
    selector: str | None = None
    n: int = 1
    agent: str | None = None
    model: str | None = None
    reasoning: str | None = None
    paragraphs: list[str] = Field(default_factory=list)
    strategies: dict[str, Any] = Field(default_factory=dict)
    sampling: dict[str, Any] = Field(default_factory=dict, description="temperature, seed, max_tokens where set")
    sandbox: str | None = None
    isolated: bool = False
    submission_refusals: list[str] = Field(default_factory=list)

    @property
    def generations(self) -> str:
        """The directory under RUN/generations its candidates came from (``arm@view[#eK]``)."""
        return f"{self.arm}@{self.view}" + (f"#e{self.epoch}" if self.epoch is not None else "")

    @classmethod
    def from_name(cls, name: str, data: dict[str, Any] | None = None) -> ConfigRecord:
        data = dict(data or {})
        data.setdefault("name", name)
        arm, view, suffix = split_name(data["name"])
        data.setdefault("arm", arm)
        if view in ("th", "ah"):
            data.setdefault("view", view)
        if suffix == "single":
            data.setdefault("role", "single")
        elif suffix:
            data.setdefault("role", "selector")
            data.setdefault("selector", suffix)
        return cls.model_validate(data)

    @property
    def base(self) -> str:
        """``arm@view``: the name the arm's own result carries (shared by its single/selector configs)."""
        return f"{self.arm}@{self.view}" if self.view else self.arm


def config_dir_name(name: str) -> str:
    """The directory of configuration ``name`` under RUN/configs ('/' is not a file-name character)."""
    return name.replace("/", "~")


def split_name(name: str) -> tuple[str, str | None, str | None]:
    """``arm@view/suffix`` -> (arm, view, suffix); parts a name does not have are None."""
    if "@" not in name:
        return name, None, None
    arm, rest = name.split("@", 1)
    view, _, suffix = rest.partition("/")
    return arm, view or None, suffix or None


class ConfigData(BaseModel):
    """One configuration's scored results plus the predictions they came from."""

    name: str
    run: str = Field(description="the run directory the configuration was read from")
    directory: str
    record: ConfigRecord
    results: list[InstanceResult]
    predictions: dict[str, Prediction] = Field(default_factory=dict)
    skipped_prediction_lines: int = 0
    summary: RunSummary | None = Field(None, description="summary.json beside the results; None when absent or "
                                       "written in another schema (the results are what counts)")

    def generation_metadata(self) -> dict[str, GenerationMetadata]:
        """Per instance: the prediction's metadata, else the copy evaluate stored in the result
        (``req2test evaluate`` copies Prediction.metadata into every InstanceResult)."""
        out: dict[str, GenerationMetadata] = {}
        for result in self.results:
            prediction = self.predictions.get(result.instance_id)
            out[result.instance_id] = prediction.metadata if prediction is not None else result.metadata
        return out

    def rows(self) -> list[dict[str, Any]]:
        """Results as the plain dicts bench.stats / bench.summary metrics take."""
        return [r.model_dump(mode="json") for r in self.results]


# ----------------------------------------------------------------------------- loading
def read_results_file(path: Path) -> list[InstanceResult]:
    """The journal's last record of each instance (a torn tail is evaluate's to recompute)."""
    try:
        return list(Journal(path, InstanceResult, key=lambda result: result.instance_id, repair=False).done.values())
    except JournalError as exc:
        raise RunsError(str(exc)) from None


def _read_predictions(path: Path) -> tuple[dict[str, Prediction], int]:
    """Predictions by instance; unreadable lines are skipped (evaluate scored them as generation failures)."""
    predictions: dict[str, Prediction] = {}
    skipped = 0
    if not path.is_file():
        return predictions, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            prediction = Prediction.model_validate_json(line)
        except ValidationError:
            skipped += 1
            continue
        predictions[prediction.instance_id] = prediction
    return predictions, skipped


def _read_summary(path: Path) -> RunSummary | None:
    try:
        return RunSummary.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):  # absent, or an older run's summary: the report recomputes from results
        return None


def _load_one(directory: Path, run: Path, default_name: str) -> ConfigData:
    config_path = directory / "config.json"
    data: dict[str, Any] | None = None
    if config_path.is_file():
        try:
            data = json.loads(config_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunsError(f"{config_path}: invalid JSON ({exc.msg}, line {exc.lineno})") from None
        if not isinstance(data, dict):
            raise RunsError(f"{config_path}: expected a JSON object")
    name = str((data or {}).get("name") or default_name)
    try:
        record = ConfigRecord.from_name(name, data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise RunsError(f"{config_path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    results = read_results_file(directory / "results.jsonl")
    predictions, skipped = _read_predictions(directory / "predictions.jsonl")
    return ConfigData(name=name, run=str(run), directory=str(directory), record=record, results=results,
                      predictions=predictions, skipped_prediction_lines=skipped,
                      summary=_read_summary(directory / "summary.json"))


Layout = Literal["experiment", "evaluate", "evaluations"]


def run_layout(path: Path) -> Layout | None:
    """Which layout ``path`` has: ``req2test run`` (configs/), ``req2test evaluate`` (results.jsonl) or a
    directory of evaluate runs (*/results.jsonl); None for none of them."""
    if (path / "configs").is_dir():
        return "experiment"
    if (path / "results.jsonl").is_file():
        return "evaluate"
    if any(path.glob("*/results.jsonl")):
        return "evaluations"
    return None


def load_configs(path: Path) -> list[ConfigData]:
    """Every configuration of a run directory, sorted by name (``arm@view`` before ``arm@view/single``)."""
    path = Path(path)
    if not path.exists():
        raise RunsError(f"{path}: no such run directory")
    if not path.is_dir():
        raise RunsError(f"{path}: not a directory")
    configs_dir = path / "configs"
    configs: list[ConfigData] = []
    layout = run_layout(path)
    if layout == "experiment":
        for results in sorted(configs_dir.rglob("results.jsonl")):
            directory = results.parent
            # without a config.json the name is the directory's path; `req2test run` spells '/' as '~' there
            default = directory.relative_to(configs_dir).as_posix().replace("~", "/")
            configs.append(_load_one(directory, path, default))
    elif layout == "evaluate":
        configs.append(_load_one(path, path, path.resolve().name))
    elif layout == "evaluations":
        # a directory of evaluate runs (e.g. `req2test calibrate -o DIR`: oracle/, empty/, then-stripped/)
        children = sorted(p.parent for p in path.glob("*/results.jsonl"))
        configs.extend(_load_one(child, path, child.name) for child in children)
    else:
        raise RunsError(f"{path}: neither configs/*/results.jsonl (req2test run), results.jsonl "
                        f"(req2test evaluate) nor */results.jsonl found")
    if not configs:
        raise RunsError(f"{configs_dir}: no configuration has a results.jsonl yet")
    names = [c.name for c in configs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise RunsError(f"{path}: configuration {duplicates[0]!r} appears in more than one directory")
    return sorted(configs, key=lambda c: c.name)


def load_runs(paths: list[Path]) -> list[ConfigData]:
    """The configurations of several run directories, in the order given; with more than one run each is named
    ``RUN:CONFIG`` (RUN: the directory's name), so the same configuration of two runs (the same experiment on two
    datasets) stays two. Its ``record.name`` keeps the name the run gave it."""
    if len(paths) == 1:
        return load_configs(paths[0])
    configs: list[ConfigData] = []
    for path, label in zip(paths, run_labels(paths)):
        configs.extend(prefixed(load_configs(path), label))
    return configs


def prefixed(configs: list[ConfigData], label: str) -> list[ConfigData]:
    """The configurations of run ``label`` as a report of several runs names them: ``RUN:CONFIG``."""
    return [c.model_copy(update={"name": f"{label}:{c.name}"}) for c in configs]


def run_labels(paths: list[Path]) -> list[str]:
    """Each run directory's name, what prefixes its configurations when several runs are read together;
    a directory given twice, or two directories of one name, is a one-line error."""
    resolved = [Path(p).resolve() for p in paths]
    repeated = sorted({str(p) for p in paths if resolved.count(Path(p).resolve()) > 1})
    if repeated:
        raise RunsError(f"{repeated[0]}: the same run directory is given twice")
    labels = [r.name for r in resolved]
    twins = sorted({label for label in labels if labels.count(label) > 1})
    if twins:
        raise RunsError(f"two run directories are named {twins[0]!r}: rename one (a run's directory name "
                        f"prefixes its configurations)")
    return labels


def split_selection(spec: str) -> tuple[Path, str | None]:
    """``RUN:CONFIG`` -> (RUN, CONFIG); a bare existing directory -> (RUN, None).

    Run paths may themselves hold ':' (timestamps), so the split is at the rightmost ':' whose left
    part is an existing directory."""
    if Path(spec).is_dir():
        return Path(spec), None
    for index in range(len(spec) - 1, 0, -1):
        if spec[index] == ":" and Path(spec[:index]).is_dir():
            return Path(spec[:index]), spec[index + 1:] or None
    run = spec.split(":", 1)[0] if ":" in spec else spec
    raise RunsError(f"{run}: no such run directory (select a configuration as RUN:CONFIG)")


def select_config(spec: str) -> ConfigData:
    """The one configuration ``RUN:CONFIG`` (or ``RUN`` when it holds exactly one) names."""
    run, name = split_selection(spec)
    configs = load_configs(run)
    available = ", ".join(c.name for c in configs)
    if name is None:
        if len(configs) == 1:
            return configs[0]
        raise RunsError(f"{run} holds {len(configs)} configurations; choose one as {run}:CONFIG from: {available}")
    for config in configs:
        # the directory's spelling ('~' for '/') names the configuration too: it is what `ls` shows
        if name in (config.name, config_dir_name(config.name)):
            return config
    if len(configs) == 1 and not (run / "configs").is_dir() and name == run.name:
        return configs[0]
    raise RunsError(f"{run}: no configuration {name!r}; available: {available}")
