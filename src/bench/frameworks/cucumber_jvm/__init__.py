"""Cucumber-JVM (Java) as a req2test framework — issue 29, in progress: only the runs part
exists, proven on java-algorand-sdk v2.10.1 (cucumber-jvm 6.6.0). There is no ``Framework``
yet (no builder, judge, views or mutants), so the registry does not offer ``cucumber-jvm`` and
a project asking for it gets the usual "not a known test framework" line.

- Maven and the JDK as req2test drives them: a req2test-owned local repository, the test
  compile once, the test classpath, JaCoCo's jars from Maven Central: ``toolchain.py``;
- one scenario (or one Examples row, selected by its own line) per fresh JVM through
  ``io.cucumber.core.cli.Main``, read from the JSON formatter, optionally with an AppCDS
  archive and the JaCoCo agent: ``runner.py``, ``cucumber_json.py``, ``pickles.py``;
- the step definitions a run's message stream lists (pattern, Java method): ``definitions.py``;
- per-scenario coverage, JaCoCo exec -> XML -> covered lines per source file: ``jacoco.py``.
"""
