"""A Cucumber-JVM project compiled once, and variants of its test side compiled against it.

``prepare`` is the developers' build: ``mvn test-compile`` (production into ``target/classes``,
tests and test resources into ``target/test-classes``) and the test-scope dependency jars. A
*variant* (a positive or negative workspace, a calibration test, a prediction) changes only
test sources: its glue is compiled by the warm javac (``javac_server``) into a directory of
its own, from a hard-linked copy of the test sources with the changed files written in, and it
runs on

    dependency jars : variant classes : test resources : target/classes

— the jars first (AppCDS, ``toolchain.runtime_classpath``), the variant's classes instead of
``target/test-classes`` (a class the variant removes must not be found there), the test
resources (features, mock responses) from a copy of ``target/test-classes`` without its
classes. Only the glue packages' files are named to javac; what they use elsewhere in the test
sources is compiled implicitly through ``-sourcepath``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.frameworks.cucumber_jvm.javac_server import CompileResult, JavacPool
from bench.frameworks.cucumber_jvm.runner import Suite
from bench.frameworks.cucumber_jvm.settings import CucumberJvmSettings
from bench.frameworks.cucumber_jvm.toolchain import JavaToolchain, build_classpath, compile_tests, runtime_classpath
from bench.frameworks.trees import link_tree

CLASSPATH_FILE = "req2test-classpath.txt"  # under target/: the dependency jars of a prepared tree


class PrepareError(RuntimeError):
    """The project does not build with Maven here: one line."""


@dataclass(frozen=True)
class JavaProject:
    """A work tree compiled once; every variant of its test side compiles against it."""

    root: Path
    settings: CucumberJvmSettings
    dependencies: tuple[str, ...]  # test-scope jars, Maven's order
    resources: Path  # the test resources alone (``target/test-classes`` less its classes)
    java: str = "java"

    @property
    def classes(self) -> Path:
        return self.root / "target" / "classes"

    @property
    def test_classes(self) -> Path:
        return self.root / "target" / "test-classes"

    def suite(self, test_classes: Path | None = None, root: Path | None = None) -> Suite:
        """The scenario JVMs' common part: the project's own compiled tests, or a variant's."""
        if test_classes is None:
            classpath = runtime_classpath(self.root, list(self.dependencies))
        else:
            classpath = [*self.dependencies, str(test_classes.resolve()), str(self.resources.resolve()),
                         str(self.classes.resolve())]
        return Suite(root=root or self.root, classpath=tuple(classpath), glue=self.settings.glue,
                     tags=tuple(self.settings.tags), java=self.java, jvm_args=self.settings.jvm_args,
                     setup_tags=self.settings.setup_tags, teardown_tags=self.settings.teardown_tags)

    def glue_sources(self, root: Path | None = None) -> list[str]:
        """The ``.java`` files of the glue packages (relative), sorted."""
        base = root or self.root
        found: set[str] = set()
        for directory in self.settings.glue_dirs:
            found |= {p.relative_to(base).as_posix() for p in (base / directory).rglob("*.java")}
        return sorted(found)


def prepare(root: Path, settings: CucumberJvmSettings, toolchain: JavaToolchain, scratch: Path) -> JavaProject:
    """``mvn test-compile`` (offline first: a second build of a project needs no network) and
    the dependency class path. ``PrepareError`` when Maven cannot build the project."""
    compiled = compile_tests(root, toolchain, offline=True)
    if not compiled.ok:
        compiled = compile_tests(root, toolchain)
    if not compiled.ok:
        raise PrepareError(f"mvn test-compile failed: {_maven_error(compiled.output)}")
    result, dependencies = build_classpath(root, scratch / "classpath.txt", toolchain, offline=True)
    if not result.ok:
        result, dependencies = build_classpath(root, scratch / "classpath.txt", toolchain)
    if not result.ok:
        raise PrepareError(f"mvn dependency:build-classpath failed: {_maven_error(result.output)}")
    # beside the classes, for a later fresh run on this tree (``CucumberJvmFramework.fresh_run``)
    (root / "target" / CLASSPATH_FILE).write_text(os.pathsep.join(dependencies), encoding="utf-8")
    resources = without_classes(root / "target" / "test-classes", scratch / "test-resources")
    return JavaProject(root=root, settings=settings, dependencies=tuple(dependencies), resources=resources,
                       java=toolchain.java)


def without_classes(classes: Path, target: Path) -> Path:
    """``target`` holding the files of ``classes`` that are not class files (hard links): the
    resources Maven copied beside the compiled classes."""
    target.mkdir(parents=True, exist_ok=True)
    if classes.is_dir():
        for directory, _dirs, names in os.walk(classes):
            here = Path(directory)
            for name in names:
                if name.endswith(".class"):
                    continue
                destination = target / here.relative_to(classes) / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(here / name, destination)
                except OSError:
                    shutil.copyfile(here / name, destination)
    return target


def _maven_error(output: str) -> str:
    errors = [line.strip() for line in output.splitlines() if "[ERROR]" in line or "ERROR" in line[:12]]
    return (errors[0] if errors else output.strip().splitlines()[-1] if output.strip() else "no output")[:400]


@dataclass(frozen=True)
class Variant:
    classes: Path  # the compiled glue (and what it uses of the test sources)
    compile: CompileResult


def compile_variant(project: JavaProject, replaced: Mapping[str, bytes | str], out: Path,
                    javac: JavacPool) -> Variant:
    """The test side with ``replaced`` (project-relative paths -> content) compiled into
    ``out/classes``; ``out/src`` holds the sources it compiled (a hard-linked copy)."""
    sources_rel = project.settings.test_sources
    tree = out / "src"
    link_tree(project.root / sources_rel, tree, {k[len(sources_rel) + 1:]: v for k, v in replaced.items()
                                                 if k.startswith(sources_rel + "/")})
    classes = out / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    files = [str((tree / rel[len(sources_rel) + 1:]).resolve()) for rel in project.glue_sources(project.root)
             if (tree / rel[len(sources_rel) + 1:]).is_file()]
    files += [str((tree / rel[len(sources_rel) + 1:]).resolve()) for rel in replaced
              if rel.startswith(sources_rel + "/") and rel.endswith(".java")
              and str((tree / rel[len(sources_rel) + 1:]).resolve()) not in files]
    argfile = out / "sources.txt"
    argfile.write_text("\n".join(_quoted(f) for f in files) + "\n", encoding="utf-8")
    classpath = os.pathsep.join([*project.dependencies, str(project.classes.resolve())])
    result = javac.compile(["-d", str(classes.resolve()), "-cp", classpath, "-sourcepath", str(tree.resolve()),
                            "-implicit:class", f"@{argfile.resolve()}"])
    return Variant(classes, result)


def _quoted(path: str) -> str:
    """A javac @argfile entry (quoted when it holds a space or a quote)."""
    if any(c in path for c in " \t\"'\\"):
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return path


__all__ = ["CLASSPATH_FILE", "JavaProject", "PrepareError", "Variant", "compile_variant", "prepare",
           "without_classes"]
