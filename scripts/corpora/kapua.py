"""Assemble a Kapua Cucumber-JVM slice (issue 29) at a pinned commit: one service's
``@env_none`` scenarios, the developers' own glue and the service's production, laid out as a
single Maven module that req2test's Cucumber-JVM framework takes as it is.

Eclipse Kapua 3690866ab5 (develop, 2.1.0-SNAPSHOT) runs cucumber-jvm 6.11.0 with
cucumber-guice on JUnit 4 (surefire). Its 1,504 scenarios are in ten Maven modules; the 670
tagged ``@env_none`` run on an in-memory H2 (the other 834, ``@env_docker*``, need Kapua's
Docker images: out of scope). Per module (scenarios, ``@setup``/``@teardown`` ones included):

    qa/integration 291 (of 1,125), service/security/test 81, service/device/registry/test 75,
    service/job/test 62, service/tag/test 54, translator/test 33, service/user/test 27,
    service/scheduler/test 23, service/account/test 22, service/system/test 2

A test module holds the features and a JUnit runner (``@CucumberOptions(glue=...)``); its glue
lives in *other* modules' ``src/main/java`` (``service/<x>/test-steps``, ``qa/common``), its
production in ``service/<x>/internal``. The service tag's runner ``RunTagUnitTest`` names
``org.eclipse.kapua.service.{device.registry.steps,tag.test,tag.steps}`` and
``org.eclipse.kapua.qa.common``; ``mvn -pl service/tag/test -am`` is 135 of Kapua's 246 modules
(every service test module together: 155; qa/integration: 173; all @env_none runners: 184) —
qa/common alone pulls in most of the device-management stack.

What this script does (``--slice tag``, the default and the one measured):

1. **Build**: a checkout of Kapua at the commit (``--work``, kept for reuse), then
   ``mvn -pl build-tools install`` (the checkstyle plugin's dependency ``kapua-build-tools``
   must be in the local repository before any module's ``validate``, ``-Dcheckstyle.skip``
   notwithstanding) and ``mvn -pl <test module> -am install -DskipTests`` with checkstyle,
   license, JaCoCo, sources and javadoc skipped. The root pom's maven-toolchains-plugin asks
   for a JDK 11; a toolchains file (``-t``, beside the checkout; ``~/.m2`` is not touched)
   declares the running JDK (17) as version 11: Kapua compiles with ``-source/-target 1.8``,
   which JDK 17's javac does. Measured (2 cores, shared, ``nice -n 19 -T 1``): build-tools
   9 s; the tag slice's 135 modules 7 min 36 s wall, 4 min 23 s CPU, downloads included.
2. **The test class path** of the test module (``dependency:build-classpath``, test scope: 304
   jars for tag) and the compile class path of the production module, read back as Maven
   coordinates from the local repository's layout.
3. **The single module** in OUT:

       src/main/java, src/main/resources   <- service/tag/internal   (production: the mutants')
       src/test/java                       <- service/tag/test/src/test/java and the
                                              src/main/java of every module holding a glue
                                              package (tag/test-steps, device/registry/test-steps,
                                              qa/common)
       src/test/resources                  <- those modules' resources, the test module's last
                                              (it wins, as its test-classes come first on
                                              surefire's class path)
       pom.xml                             <- every other jar of the test class path, in its
                                              order, at its resolved version, with no transitive
                                              dependencies (``exclusions *:*``): the class path
                                              is the developers' one; compile scope for what
                                              the production module compiles against
       req2test.toml                       <- features, the runner's glue, production, tags
                                              ``env_none``, the ``@setup``/``@teardown``
                                              companions and the JVM arguments (below)

   and copies Kapua's installed artifacts (``org/eclipse/kapua``) into req2test's Maven
   repository (``REQ2TEST_MAVEN_CACHE``/repository), where the framework's ``mvn`` finds them.
4. **JVM arguments** (``jvm_args``): surefire's ``systemPropertyVariables`` of the root pom
   (``commons.db.schema=kapuadb``, ``crypto.secret.key``, ``user.timezone=UTC``...) and
   ``--add-opens=java.base/java.lang=ALL-UNNAMED``: the glue's Mockito 1.10.19 (cglib) calls
   ``ClassLoader.defineClass`` reflectively, which JDK 11 allows with a warning and JDK 17
   refuses (every ``setupDI`` hook fails with ``InaccessibleObjectException``).

**Companion scenarios.** Each Kapua feature starts with a ``@setup`` scenario ("Initialize
test environment": its ``@KapuaProperties`` tag sets ``locator.class.impl`` to the glue's
``MockedLocator``, a ``@Before("@setup")`` hook builds the Guice injector of mocked and real
services) and most end with a ``@teardown`` one; every other scenario relies on the JVM state
the setup left. A scenario alone in a fresh JVM fails; ``feature:SETUP:LINE:TEARDOWN`` passes.
req2test.toml says so (``setup_tags``, ``teardown_tags``): the framework selects them with
every run and keeps them out of the instances.

Usage:
    python scripts/corpora/kapua.py OUT [--kapua GIT] [--commit SHA] [--slice tag]
                                        [--work DIR] [--nice 19] [--skip-build]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

KAPUA_COMMIT = "3690866ab59f881be388fc30e7df529c0f99de58"  # develop, 2.1.0-SNAPSHOT
MIRRORS = Path("/work/.mirror")
POM_NS = "http://maven.apache.org/POM/4.0.0"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
SKIPS = ["-DskipTests", "-Dcheckstyle.skip", "-Dlicense.skip", "-Djacoco.skip", "-Dmaven.source.skip",
         "-Dmaven.javadoc.skip"]
# JDK 17 refuses what JDK 11 allowed with a warning: the glue's Mockito 1.10.19 (cglib) defines
# classes through ClassLoader.defineClass made accessible by reflection
ADD_OPENS = ("--add-opens=java.base/java.lang=ALL-UNNAMED",)
SETUP_TAGS = ("setup",)
TEARDOWN_TAGS = ("teardown",)
TAGS = ("env_none",)
# jars the builder's warm runner loads afresh per run (settings.reload_groups): Kapua's modules load
# glue classes by name and hold the locator statically; Mockito 1's cglib caches proxies across loaders
RELOAD_GROUPS = ("org.eclipse.kapua", "org.mockito", "org.objenesis")


@dataclass(frozen=True)
class Slice:
    test: str  # the Maven module with the features and the JUnit runner
    runner: str  # its @CucumberOptions class
    production: str  # the module whose src/main/java the mutants change


SLICES = {
    "tag": Slice("service/tag/test", "org.eclipse.kapua.service.tag.test.RunTagUnitTest", "service/tag/internal"),
}


def default_source() -> str:
    for candidate in (MIRRORS / "eclipse+kapua" / "repo", Path("/work/corpora/kapua")):
        if candidate.is_dir():
            return str(candidate)
    return "https://github.com/eclipse/kapua"


def checkout(source: str, commit: str, dest: Path) -> None:
    subprocess.run(["git", "clone", "-q", "--no-checkout", source, str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "-q", commit], check=True)


# --------------------------------------------------------------------------- Maven
def java_home() -> str:
    proc = subprocess.run(["java", "-XshowSettings:properties", "-version"], capture_output=True, text=True,
                          check=False)
    found = re.search(r"^\s*java\.home = (.+)$", proc.stderr + proc.stdout, re.MULTILINE)
    if not found:
        raise SystemExit("cannot tell the JDK's home from `java -XshowSettings:properties -version`")
    return found[1].strip()


def write_toolchains(path: Path, home: str, version: str = "11") -> Path:
    """A toolchains file declaring the JDK at ``home`` as version ``version`` (what Kapua's
    maven-toolchains-plugin asks for), for ``mvn -t``."""
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<!-- scripts/corpora/kapua.py: Kapua's root pom wants a JDK 11 toolchain; this JDK compiles its\n"
        "     -source/-target 1.8 just as well -->\n"
        "<toolchains>\n  <toolchain>\n    <type>jdk</type>\n"
        f"    <provides>\n      <version>{version}</version>\n    </provides>\n"
        f"    <configuration>\n      <jdkHome>{home}</jdkHome>\n    </configuration>\n"
        "  </toolchain>\n</toolchains>\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class Maven:
    root: Path
    toolchains: Path
    log: Path
    repository: Path | None = None  # None: Maven's default (~/.m2/repository)
    nice: int | None = None

    def run(self, args: list[str], cwd: Path | None = None) -> float:
        argv = ["mvn", "-B", "-T", "1", "-t", str(self.toolchains)]
        if self.repository is not None:
            argv.append(f"-Dmaven.repo.local={self.repository}")
        argv += args
        if self.nice is not None:
            argv = ["nice", "-n", str(self.nice), *argv]
        start = time.perf_counter()
        with self.log.open("a", encoding="utf-8") as sink:
            sink.write(f"\n$ {' '.join(argv)}\n")
            sink.flush()
            proc = subprocess.run(argv, cwd=cwd or self.root, stdout=sink, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, check=False)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"mvn {' '.join(args[:6])} failed after {seconds:.0f} s: see {self.log}")
        print(f"mvn {' '.join(a for a in args if not a.startswith('-D'))}: {seconds:.0f} s", file=sys.stderr)
        return seconds

    def local_repository(self) -> Path:
        return self.repository or Path.home() / ".m2" / "repository"

    def classpath(self, module: str, scope: str, output: Path) -> list[str]:
        self.run([f"{DEPENDENCY_PLUGIN}:build-classpath", f"-Dmdep.includeScope={scope}",
                  f"-Dmdep.outputFile={output.resolve()}"], cwd=self.root / module)
        return [p for p in output.read_text(encoding="utf-8").strip().split(os.pathsep) if p]


def build(maven: Maven, piece: Slice) -> dict[str, float]:
    """build-tools first (the checkstyle plugin's dependency), then the test module and every
    module it needs, installed."""
    return {"build-tools": maven.run(["-pl", "build-tools", "-Dcheckstyle.skip", "-Dlicense.skip", "install"]),
            "modules": maven.run(["-pl", piece.test, "-am", *SKIPS, "install"])}


@dataclass(frozen=True)
class Coordinates:
    group: str
    artifact: str
    version: str
    kind: str
    classifier: str = ""


def coordinates(jar: str, repository: Path) -> Coordinates:
    """``group:artifact:version:type[:classifier]`` of a file in a Maven repository's layout
    (``g/r/o/u/p/artifact/version/artifact-version[-classifier].type``)."""
    rel = Path(jar).resolve().relative_to(repository.resolve()).parts
    *group, artifact, version, name = rel
    stem = f"{artifact}-{version}"
    if not name.startswith(stem):
        raise ValueError(f"{jar} is not laid out as a Maven repository file")
    rest = name[len(stem):]
    kind = rest.rsplit(".", 1)[-1]
    classifier = rest[:-(len(kind) + 1)].lstrip("-")
    return Coordinates(".".join(group), artifact, version, kind, classifier)


# --------------------------------------------------------------------------- the modules
def _local(element: ET.Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def _child(element: ET.Element | None, name: str) -> ET.Element | None:
    return next((c for c in element if _local(c) == name), None) if element is not None else None


def module_dirs(root: Path) -> dict[str, str]:
    """artifactId -> module directory (relative), for every pom.xml of the checkout."""
    found: dict[str, str] = {}
    for pom in sorted(root.rglob("pom.xml")):
        rel = pom.parent.relative_to(root).as_posix()
        if "/target/" in f"/{rel}/" or "/src/" in f"/{rel}/":
            continue
        artifact = _child(ET.parse(pom).getroot(), "artifactId")
        if artifact is not None and artifact.text:
            found.setdefault(artifact.text.strip(), "" if rel == "." else rel)
    return found


def runner_glue(root: Path, piece: Slice) -> list[str]:
    """The glue packages of the slice's runner (``@CucumberOptions(glue = {...})``)."""
    source = root / piece.test / "src" / "test" / "java" / (piece.runner.replace(".", "/") + ".java")
    text = source.read_text(encoding="utf-8")
    found = re.search(r"glue\s*=\s*(\{[^}]*\}|\"[^\"]*\")", text)
    if not found:
        raise SystemExit(f"{source}: no @CucumberOptions glue")
    return re.findall(r"\"([^\"]+)\"", found[1])


def glue_modules(root: Path, piece: Slice, glue: list[str], kapua_modules: list[str]) -> dict[str, str]:
    """glue package -> the source root that holds it: the test module's src/test/java, else the
    src/main/java of a Kapua module on its class path."""
    roots = [f"{piece.test}/src/test/java"] + [f"{m}/src/main/java" for m in kapua_modules]
    found: dict[str, str] = {}
    for package in glue:
        path = package.replace(".", "/")
        holders = [r for r in roots if (root / r / path).is_dir()]
        if not holders:
            raise SystemExit(f"glue package {package}: in no module of {piece.test}'s class path")
        found[package] = holders[0]
    return found


def surefire_properties(root: Path) -> dict[str, str]:
    """The root pom's surefire ``systemPropertyVariables`` (every Kapua test module's)."""
    project = ET.parse(root / "pom.xml").getroot()
    properties: dict[str, str] = {}
    for plugin in project.iter(f"{{{POM_NS}}}plugin"):
        if (getattr(_child(plugin, "artifactId"), "text", "") or "").strip() != "maven-surefire-plugin":
            continue
        variables = _child(_child(plugin, "configuration"), "systemPropertyVariables")
        for variable in variables if variables is not None else []:
            properties[_local(variable)] = (variable.text or "").strip()
    return properties


# --------------------------------------------------------------------------- the single module
def _copy_tree(source: Path, target: Path, log: list[str], overwrite: bool = True) -> None:
    if not source.is_dir():
        return
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
        destination = target / path.relative_to(source)
        if destination.exists():
            log.append(f"{destination}: {'replaced by' if overwrite else 'kept over'} {path}")
            if not overwrite:
                continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)


def _dependency_xml(dep: Coordinates, scope: str) -> str:
    classifier = f"\n      <classifier>{dep.classifier}</classifier>" if dep.classifier else ""
    kind = f"\n      <type>{dep.kind}</type>" if dep.kind != "jar" else ""
    return (f"    <dependency>\n      <groupId>{dep.group}</groupId>\n      <artifactId>{dep.artifact}</artifactId>\n"
            f"      <version>{dep.version}</version>{kind}{classifier}\n      <scope>{scope}</scope>\n"
            "      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>\n"
            "    </dependency>\n")


def flat_pom(name: str, commit: str, dependencies: list[tuple[Coordinates, str]], properties: dict[str, str],
             runner: str) -> str:
    variables = "".join(f"            <{k}>{v}</{k}>\n" for k, v in properties.items())
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<!-- scripts/corpora/kapua.py: Kapua {commit[:10]}'s {name} slice as one module; the dependencies\n"
        "     are the test module's class path as Maven resolved it there, in its order, none transitive -->\n"
        '<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"\n'
        '         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>org.eclipse.kapua.req2test</groupId>\n"
        f"  <artifactId>kapua-{name}-slice</artifactId>\n"
        "  <version>2.1.0-SNAPSHOT</version>\n"
        "  <properties>\n"
        "    <maven.compiler.source>1.8</maven.compiler.source>\n"
        "    <maven.compiler.target>1.8</maven.compiler.target>\n"
        "    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>\n"
        "  </properties>\n"
        "  <dependencies>\n" + "".join(_dependency_xml(d, s) for d, s in dependencies) + "  </dependencies>\n"
        "  <build>\n    <plugins>\n      <plugin>\n"
        "        <groupId>org.apache.maven.plugins</groupId>\n"
        "        <artifactId>maven-surefire-plugin</artifactId>\n"
        "        <version>3.0.0-M7</version>\n"
        "        <configuration>\n"
        f"          <includes><include>**/{runner.rsplit('.', 1)[-1]}.java</include></includes>\n"
        f"          <argLine>{' '.join(ADD_OPENS)}</argLine>\n"
        f"          <systemPropertyVariables>\n{variables}          </systemPropertyVariables>\n"
        "        </configuration>\n      </plugin>\n    </plugins>\n  </build>\n</project>\n")


def _toml_list(values) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def req2test_toml(glue: list[str], production_package: str, jvm_args: list[str]) -> str:
    return ("[tool.req2test]\n"
            'framework = "cucumber-jvm"\n'
            'features = "src/test/resources/features"\n'
            f"glue = {_toml_list(glue)}  # the runner's @CucumberOptions glue\n"
            'production = ["src/main/java"]\n'
            f'production_package = "{production_package}"\n'
            f"tags = {_toml_list(TAGS)}\n"
            f"setup_tags = {_toml_list(SETUP_TAGS)}        # run before every selected scenario of their feature\n"
            f"teardown_tags = {_toml_list(TEARDOWN_TAGS)}  # and after it, in the same JVM\n"
            f"jvm_args = {_toml_list(jvm_args)}\n"
            f"reload_groups = {_toml_list(RELOAD_GROUPS)}  # the warm runner loads these jars afresh per run\n")


def production_package(sources: Path) -> str:
    packages = set()
    for path in sources.rglob("*.java"):
        found = re.search(r"^\s*package\s+([\w.]+)\s*;", path.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
        if found:
            packages.add(found[1])
    parts = [p.split(".") for p in sorted(packages)]
    common: list[str] = []
    for names in zip(*parts):
        if len(set(names)) != 1:
            break
        common.append(names[0])
    return ".".join(common)


def req2test_repository() -> Path:
    try:
        from bench.frameworks.cucumber_jvm.toolchain import cache_root
    except ImportError:
        base = os.environ.get("REQ2TEST_MAVEN_CACHE") or str(
            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "req2test" / "maven")
        return Path(base) / "repository"
    return cache_root() / "repository"


def assemble(out: Path, source: str, commit: str = KAPUA_COMMIT, slice_name: str = "tag", work: Path | None = None,
             repository: Path | None = None, target_repository: Path | None = None, nice: int | None = None,
             skip_build: bool = False) -> Path:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty")
    piece = SLICES[slice_name]
    work = (work or out.parent / f"{out.name}.kapua-build").resolve()
    kapua = work / "kapua"
    work.mkdir(parents=True, exist_ok=True)
    if not (kapua / "pom.xml").is_file():
        checkout(source, commit, kapua)
    head = subprocess.run(["git", "-C", str(kapua), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if head != commit:
        raise SystemExit(f"{kapua} is at {head[:10]}, not {commit[:10]}: remove it or pass another --work")
    maven = Maven(kapua, write_toolchains(work / "toolchains.xml", java_home()), work / "maven.log", repository,
                  nice)
    if not skip_build:
        build(maven, piece)
    local = maven.local_repository()
    test_path = maven.classpath(piece.test, "test", work / f"{slice_name}-test-classpath.txt")
    main_path = set(maven.classpath(piece.production, "compile", work / f"{slice_name}-main-classpath.txt"))
    modules = module_dirs(kapua)
    on_path = [(jar, coordinates(jar, local)) for jar in test_path]
    kapua_modules = [modules[c.artifact] for _jar, c in on_path if c.group.startswith("org.eclipse.kapua")
                     and c.artifact in modules]
    glue = runner_glue(kapua, piece)
    holders = glue_modules(kapua, piece, glue, kapua_modules)
    moved = {m.split("/src/")[0] for m in holders.values()} | {piece.test, piece.production}
    by_dir = {v: k for k, v in modules.items()}
    moved_artifacts = {by_dir[m] for m in moved if m in by_dir}
    dependencies = [(c, "compile" if jar in main_path else "test") for jar, c in on_path
                    if not (c.group.startswith("org.eclipse.kapua") and c.artifact in moved_artifacts)]

    log: list[str] = []
    out.mkdir(parents=True, exist_ok=True)
    _copy_tree(kapua / piece.production / "src/main/java", out / "src/main/java", log)
    _copy_tree(kapua / piece.production / "src/main/resources", out / "src/main/resources", log)
    for holder in dict.fromkeys(holders.values()):
        module = holder.split("/src/")[0]
        if module != piece.test:
            _copy_tree(kapua / holder, out / "src/test/java", log)
            _copy_tree(kapua / module / "src/main/resources", out / "src/test/resources", log)
    _copy_tree(kapua / piece.test / "src/test/java", out / "src/test/java", log)
    _copy_tree(kapua / piece.test / "src/test/resources", out / "src/test/resources", log)
    properties = surefire_properties(kapua)
    (out / "pom.xml").write_text(flat_pom(slice_name, commit, dependencies, properties, piece.runner),
                                 encoding="utf-8")
    jvm_args = [*ADD_OPENS, *(f"-D{k}={v}" for k, v in properties.items())]
    (out / "req2test.toml").write_text(req2test_toml(glue, production_package(out / "src/main/java"), jvm_args),
                                       encoding="utf-8")
    (out / "SLICE.md").write_text(
        f"Kapua {commit} slice `{slice_name}` (scripts/corpora/kapua.py)\n\n"
        f"- test module: {piece.test} (runner {piece.runner})\n"
        f"- production: {piece.production}/src/main/java -> src/main/java\n"
        + "".join(f"- glue {p}: {h} -> src/test/java\n" for p, h in holders.items())
        + f"- dependencies: {len(dependencies)} of the test module's {len(test_path)} class path entries "
          f"({sum(1 for _c, s in dependencies if s == 'compile')} compile scope)\n"
        + ("\nOverlapping files:\n" + "".join(f"- {line}\n" for line in log) if log else ""), encoding="utf-8")
    target = target_repository or req2test_repository()
    shutil.copytree(local / "org" / "eclipse" / "kapua", target / "org" / "eclipse" / "kapua", dirs_exist_ok=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--kapua", default=default_source(), help="a clone URL or a local git directory")
    parser.add_argument("--commit", default=KAPUA_COMMIT)
    parser.add_argument("--slice", default="tag", choices=sorted(SLICES))
    parser.add_argument("--work", type=Path, help="the Kapua checkout and its build (default: OUT.kapua-build)")
    parser.add_argument("--repository", type=Path, help="Maven's local repository for the Kapua build "
                                                        "(default: Maven's own, ~/.m2/repository)")
    parser.add_argument("--req2test-repository", type=Path, help="where req2test's mvn looks (default: "
                                                                 "$REQ2TEST_MAVEN_CACHE/repository)")
    parser.add_argument("--nice", type=int, help="run Maven under nice -n N")
    parser.add_argument("--skip-build", action="store_true", help="the modules are already installed")
    args = parser.parse_args()
    try:
        path = assemble(args.out, args.kapua, args.commit, args.slice, args.work, args.repository,
                        args.req2test_repository, args.nice, args.skip_build)
    except subprocess.CalledProcessError as exc:
        sys.exit(f"git failed: {' '.join(map(str, exc.cmd))}")
    print(path)


if __name__ == "__main__":
    main()
