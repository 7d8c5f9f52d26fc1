"""The arms' prompt paragraphs and templates, resolved against the experiment file.

Owns what ``harness.prompts.is_path`` means for an experiment: a shipped name (``grounding``) stays a
name; a file of the user's (``./my.md``, ``/abs/my.md``) becomes an absolute path, relative to the
experiment file's directory, so every unit reads the same file whatever the working directory. Every
missing or unreadable file is one located line. What each arm uses is recorded (``PromptFile``: path
and sha256) in plan.json, and ``prompt_texts`` reads the user's files for the units' options, so the
cache key hashes the very text an agent is shown.
"""

from __future__ import annotations

from pathlib import Path

from harness.experiment.config import Arm, Experiment, ExperimentError, content_hash, locate
from harness.prompts import (
    PromptError,
    PromptFile,
    available_paragraphs,
    check_template_source,
    is_path,
    paragraph_file,
    prompt_dir,
    read_prompt_file,
    text_sha256,
)


def resolve_prompts(experiment: Experiment, path: Path, text: str) -> tuple[Experiment, list[PromptFile], list[str]]:
    """The experiment with its arms' prompt files made absolute, what each arm uses, and the located errors."""
    base = path.parent
    shipped = available_paragraphs()
    files: list[PromptFile] = []
    errors: list[str] = []
    arms: list[Arm] = []
    for i, arm in enumerate(experiment.arms):
        entries: list[str] = []
        for j, entry in enumerate(arm.paragraphs):
            where = locate(path, text, ("arms", i, "paragraphs", j))
            if is_path(entry):
                file = (base / entry).resolve()
                try:
                    sha = text_sha256(read_prompt_file(file))
                except PromptError as exc:
                    stem = Path(entry).name.removesuffix(".md")
                    hint = f" (the shipped paragraph is named {stem}, without .md)" \
                        if "/" not in entry and stem in shipped else ""
                    errors.append(f"{where}: {exc}{hint}")
                    entries.append(entry)
                    continue
                entries.append(str(file))
                files.append(PromptFile(arm=arm.name, kind="paragraph", entry=entry, path=str(file), shipped=False,
                                        sha256=sha))
            elif entry not in shipped:
                errors.append(f"{where}: no paragraph {entry!r} in {prompt_dir() / 'paragraphs'} (available: "
                              f"{', '.join(shipped) or 'none'}; a file of your own: ./{entry}.md)")
                entries.append(entry)
            else:
                file = paragraph_file(entry)
                files.append(PromptFile(arm=arm.name, kind="paragraph", entry=entry, path=str(file), shipped=True,
                                        sha256=text_sha256(file.read_text(encoding="utf-8"))))
                entries.append(entry)
        template = arm.template
        if template is not None:
            # always a file: the shipped task template is what an arm without one gets
            file = (base / template).resolve()
            try:
                source = read_prompt_file(file, "template")
                check_template_source(source, str(file))
                files.append(PromptFile(arm=arm.name, kind="template", entry=template, path=str(file),
                                        shipped=False, sha256=text_sha256(source)))
                template = str(file)
            except PromptError as exc:
                errors.append(f"{locate(path, text, ('arms', i, 'template'))}: {exc}")
        arms.append(arm.model_copy(update={"paragraphs": entries, "template": template}))
    return experiment.model_copy(update={"arms": arms}), files, errors


def own_files_sha256(files: list[PromptFile]) -> str | None:
    """One digest over the user's own files (None when the arms use shipped ones only, as every run before
    them did), so a rerun in the same run directory notices an edited paragraph."""
    own = sorted((f.arm, f.kind, f.entry, f.sha256) for f in files if not f.shipped)
    return content_hash(own) if own else None


def prompt_texts(arm: Arm) -> dict[str, str]:
    """The text of each of the arm's own files, by its (absolute) path: read once, on the machine that plans."""
    texts: dict[str, str] = {}
    for entry in [*arm.paragraphs, *([arm.template] if arm.template else [])]:
        if is_path(entry) or entry == arm.template:  # a template is always a file, whatever its name
            try:
                texts[entry] = read_prompt_file(Path(entry), "template" if entry == arm.template else "paragraph")
            except PromptError as exc:  # it was there when the run was planned
                raise ExperimentError(f"arm {arm.name}: {exc}") from None
    return texts


def prompt_key(paragraphs: list[str], template: str | None, texts: dict[str, str]) -> dict[str, object]:
    """The cache key's part for the prompt: a shipped paragraph by name (the shipped tree is hashed as a
    whole), a user's file by its text's digest (editing it is a new generation; moving it is not)."""
    key: dict[str, object] = {"paragraphs": [f"sha256:{text_sha256(texts[p])}" if p in texts else p
                                             for p in paragraphs]}
    if template is not None:
        key["template"] = text_sha256(texts[template]) if template in texts else template
    return key
