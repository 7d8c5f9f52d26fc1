"""Body hiding for Java production code (views of Cucumber-JVM projects).

``syntax.methods`` finds every method, constructor and record compact constructor of the named
types of a file (nested, inner, enum, record and interface members alike); each selected body
becomes ``{ throw new UnsupportedOperationException("implementation hidden"); }`` padded with
its own line breaks, so the declaration (annotations, modifiers, type parameters, parameters,
``throws`` clause, Javadoc) stays verbatim and every later line keeps its number — the
convention of the Python, JavaScript and Go hiders. Qualnames are ``syntax``'s
(``Outer.Inner.method``, constructors ``Type.<init>``); the line is the declaration's first line
(its first annotation or modifier).

``throw`` completes abruptly, so the result compiles whatever the body was: a method with a
result needs no ``return``, and a constructor that leaves a blank ``final`` field unassigned is
accepted (definite assignment only asks at a normal completion). Java requires a constructor's
explicit ``this(...)``/``super(...)`` call to come first, and a superclass without a no-argument
constructor requires it at all: that statement stays, the ``throw`` follows it. A declaration
without a body (abstract, native, interface method), an empty body (white space only) and a
constructor body that is only its ``this(...)``/``super(...)`` call (comments aside) have nothing
to hide (``kept_stubs``). Members of local and anonymous classes and lambdas are part of their
enclosing body and go with it.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.frameworks.cucumber_jvm.syntax import java_parser, methods
from bench.frameworks.protocol import HIDDEN_MESSAGE, HidingReport

STATEMENT = f'throw new UnsupportedOperationException("{HIDDEN_MESSAGE}");'
PLACEHOLDER = f"{{ {STATEMENT} }}"
_COMMENTS = ("line_comment", "block_comment")


class JavaHider:
    """``BodyHider`` of Java (``JavaLanguage.hider``)."""

    language = "java"
    source_suffixes: tuple[str, ...] = (".java",)
    # Java tests live in their own source root (src/test/java), under no naming convention
    test_suffixes: tuple[str, ...] = ()

    def hide_bodies(self, source: str, should_hide: Callable[[str, int], bool]) -> tuple[str, HidingReport]:
        return hide_java_bodies(source, should_hide)


def hide_java_bodies(source: str, should_hide: Callable[[str, int], bool]) -> tuple[str, HidingReport]:
    data = source.encode("utf-8")
    tree = java_parser().parse(data)
    report = HidingReport()
    spans: list[tuple[int, int, bytes]] = []
    for method in methods(tree.root_node):
        body = method.body
        statements = [c for c in body.named_children if c.type not in _COMMENTS] if body is not None else []
        call = statements[0] if statements and statements[0].type == "explicit_constructor_invocation" else None
        if body is None or not data[body.start_byte + 1:body.end_byte - 1].strip() \
                or (call is not None and len(statements) == 1):
            report.kept_stubs.append(method.qualname)
            continue
        if not should_hide(method.qualname, method.line):
            continue
        if call is None:
            breaks = data[body.start_byte:body.end_byte].count(b"\n")
            spans.append((body.start_byte, body.end_byte, PLACEHOLDER.encode() + b"\n" * breaks))
        else:  # ``{ super(...);`` verbatim (comments before it included), then the throw
            breaks = data[call.end_byte:body.end_byte].count(b"\n")
            spans.append((call.end_byte, body.end_byte, f" {STATEMENT} }}".encode() + b"\n" * breaks))
        report.hidden.append(method.qualname)
    out = data
    for start, end, text in sorted(spans, reverse=True):
        out = out[:start] + text + out[end:]
    return out.decode("utf-8"), report
