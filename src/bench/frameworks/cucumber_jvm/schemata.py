"""Mutant schemata for Java: every mutant of the production in one compiled build, one of them
selected per JVM, so a mutant run costs a JVM start instead of a compile.

**The rewrite.** Every mutation site of ``language.file_sites`` is replaced, in place and on
its own lines (no line of any file moves: JaCoCo's line numbers and stack traces stay the
original's), by code that runs the original unless the JVM's selected mutant is one of the
site's. ``S`` below is ``req2test.schema.S``, written fully qualified (no import is added):

- ``a < b`` → ``S.lt(nb, nn, a, b)``, ``a + b`` → ``S.add(n, a, b)``, ``-x`` → ``S.neg(n, x)``:
  static helpers overloaded for ``int``, ``long``, ``float`` and ``double`` (``boolean`` too for
  ``& | ^``; shifts take the left operand's type). Java's overload resolution picks the
  overload its binary numeric promotion would pick (``byte + short`` is ``add(int, ...)``,
  ``int < long`` is ``lt(..., long, long)``, an ``Integer`` is unboxed), so the expression keeps
  its type, and every operand is written once and evaluated once, in order. A helper does not
  exist for what is not numeric: ``+`` of strings does not compile and is dropped;
- ``a == b``, ``!x`` → ``((a == b) != S.on(n))``, ``(!x != S.on(n))``: a negation is an
  exclusive or, for any operand type (references compared as references);
- ``a && b`` → ``((a) != S.on(n) ? (b) : S.on(n))``, ``a || b`` → ``((a) == S.on(n) ? (b) :
  !S.on(n))``: one copy of each operand, short-circuit kept (``b`` runs exactly when the
  original, or the mutant, would run it);
- a literal ``5`` → ``(S.on(n) ? 6 : 5)`` (same type; it is no longer a constant, so ``byte
  b = 5`` does not compile and is dropped);
- ``x += y;`` (one-line statements) → ``if (S.on(n)) { x -= y; } else { x += y; }``;
- ``return x;`` → ``{ if (S.on(n)) return <default>; return x; }``; a call statement ``f(x);``
  → ``if (!S.on(n)) { f(x); }`` (braced when the statement is the body of a brace-less ``if``).

Without types, javac does the typing and ``compile_schemata`` drops what it refuses: it
compiles the production sources with ``javac`` (the project's ``--release``, ``-g`` like
Maven, flow errors reported alongside type errors: ``-XDshould-stop.ifError=FLOW``), reads
each error's file and character offset (``-XDdiags.layout``: an offset, not a tab-expanded
column), maps it through the rendered spans to the innermost site, drops it and compiles again
until javac succeeds. An error beside every site is blamed on the literals of its line, else
the other sites of its line, else the literals of its method, else the whole method: a literal
made non-constant can change a conditional's type or definite assignment, which javac reports
at the conditional's ``?``, where the variable is used or at the method's end (``while
(true)``, ``final`` locals and ``c ? (byte) 1 : 0`` are never sites for that reason). An error
outside every method is a ``SchemataError``. A dropped site loses all its mutants; a kept
mutant compiles as source too (its replacement text is the schema's with the switch fixed).
What remains different from the source mutant: an arithmetic error (``/ by zero``) is thrown
inside a helper, one frame deeper; a mutated literal is no longer a compile-time constant
(``"a" == s`` still sees the interned literal). The fresh-process check (a plain rebuild with
the mutant on disk) is the reference for every verdict.

**The switch, and what the test can reach (the trust rule).** The selected mutant is a number
(``numbers`` maps mutant ids to it; 0 runs the original, no site uses some numbers in between)
read by the launcher class ``req2test.schema.Main`` from **file descriptor 3**: the JVM is
started as ``java ... req2test.schema.Main io.cucumber.core.cli.Main ARGS`` (``through_main``),
with fd 3 a file the judge opens read-only for the process (content ``req2test-mutant N``,
``selection``) and moved to 3 by ``launch``. ``Main.main`` runs before any other class of the
class path is loaded: it names fd 3 itself (a ``FileDescriptor`` whose descriptor field is set
through ``sun.misc.Unsafe``, so it needs no ``/proc``; the fallback, when ``Unsafe`` is refused,
is ``/dev/fd/3``, which needs ``/proc`` and leaves fd 3 open), reads it with ``pread`` (a file
that is not ours is left unread and open), **closes** it, keeps the number in a private field,
and only then loads the real main class reflectively (so schemata compile without cucumber on
the class path). By the time a glue class, a hook or a step loads, fd 3 is closed (a later
``open`` may reuse the number, not the content). ``S`` copies the number into its ``private
static final int ACTIVE`` when the first site runs (``S.on`` is then a constant comparison the
JIT folds). It is no environment variable, system property, argument or file the test can open.
What can still reach it, and what closes it:

- reflection: ``S.ACTIVE`` and ``Main.selected`` are private fields of classes in the unnamed
  module, so ``setAccessible(true)`` reads them; a test class declared in package
  ``req2test.schema`` could call ``Main.selected()``; calling ``S.on(n)`` for every n tells
  the number too. Only a screen of the submitted test sources closes this (the name
  ``req2test``, ``setAccessible``/``getDeclaredField``, ``sun.misc.Unsafe``), with the null
  variants (numbers no site uses, run by the judge) to catch a test that fails on a
  number it was not meant to know;
- reading the process's memory or fd 3 by path: ``/proc/self/mem``, ``/proc/self/fd/3`` and
  ``/dev/fd/3`` (a link into ``/proc``) need ``/proc``; the judge's sandbox mounts ``/dev``
  (bubblewrap ``--dev``) but should not mount ``/proc``, and fd 3 is closed before test code
  runs anyway. (A JVM runs without ``/proc``, Main included, but the ``java`` launcher finds
  ``libjli.so`` through ``$ORIGIN``, which needs ``/proc/self/exe``: such a sandbox sets
  ``LD_LIBRARY_PATH`` to the JDK's ``lib``.);
- the classes hold every mutant (they are the switch); which one runs is only the number.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter

from bench.frameworks.cucumber_jvm.language import ARITH, AUG_ASSIGN, Site, file_sites, production_files, site_mutants
from bench.frameworks.cucumber_jvm.syntax import java_parser
from bench.frameworks.cucumber_jvm.toolchain import JavaToolchain
from bench.model import Mutant

PACKAGE = "req2test.schema"
SWITCH = f"{PACKAGE}.S"  # what every site calls, fully qualified (no import, no line moves)
MAIN_CLASS = f"{PACKAGE}.Main"
SCHEMA_DIR = "req2test-schema"  # the source root of S.java and Main.java, under the tree
FD = 3
MAGIC = "req2test-mutant"
BASH = "/bin/bash"
_LAYOUT = "req2test %f:%o: %p%m"  # javac's diagnostic layout: file and character offset
_ERROR = re.compile(r"^req2test (?P<file>.+?\.java):(?P<offset>-?\d+): error: (?P<msg>.*)$")

_COMPARE = {"<": ("lt", "<=", ">="), "<=": ("le", "<", ">"), ">": ("gt", ">=", "<="), ">=": ("ge", ">", "<")}
_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem", "&": "and", "|": "or", "^": "xor",
           "<<": "shl", ">>": "shr", ">>>": "ushr"}
_NUMERIC = ("int", "long", "float", "double")


def _helpers() -> str:
    """S's overloaded helpers, one line each."""
    lines = []
    for op, (name, boundary, negate) in _COMPARE.items():
        for t in _NUMERIC:
            lines.append(f"    public static boolean {name}(int b, int n, {t} x, {t} y) "
                         f"{{ return ACTIVE == b ? x {boundary} y : ACTIVE == n ? x {negate} y : x {op} y; }}")
    for op, name in _BINARY.items():
        if op in ("<<", ">>", ">>>"):
            signatures = [("int", "long"), ("long", "long")]
        elif op in ("&", "|", "^"):
            signatures = [(t, t) for t in ("int", "long", "boolean")]
        else:
            signatures = [(t, t) for t in _NUMERIC]
        for left, right in signatures:
            lines.append(f"    public static {left} {name}(int n, {left} x, {right} y) "
                         f"{{ return ACTIVE == n ? x {ARITH[op]} y : x {op} y; }}")
    for t in _NUMERIC:
        lines.append(f"    public static {t} neg(int n, {t} x) {{ return ACTIVE == n ? x : -x; }}")
    return "\n".join(lines)


SWITCH_SOURCE = f'''// Generated by req2test: the mutant switch of a mutant schemata build. DO NOT EDIT.
package {PACKAGE};

/** Selects the one mutant this JVM runs (0: none); the number comes from {{@link Main}}. */
public final class S {{
    private static final int ACTIVE = Main.selected();

    private S() {{
    }}

    /** Whether mutant {{@code n}} is the one this JVM runs. */
    public static boolean on(int n) {{
        return ACTIVE == n;
    }}

{_helpers()}
}}
'''

MAIN_SOURCE = f'''// Generated by req2test: the launcher of a mutant schemata build. DO NOT EDIT.
package {PACKAGE};

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * {{@code java ... {MAIN_CLASS} MAIN-CLASS [ARGUMENT...]}}: reads the selected mutant from file
 * descriptor {FD} ({{@code {MAGIC} N}}), closes it, then runs {{@code MAIN-CLASS.main(ARGUMENT...)}}.
 */
public final class Main {{
    private static final String MAGIC = "{MAGIC} ";
    private static int selected;
    private static boolean read;
    private static Object notOurs; // a descriptor that is not ours stays referenced, hence open

    private Main() {{
    }}

    static synchronized int selected() {{
        return selected;
    }}

    public static void main(String[] args) throws Throwable {{
        synchronized (Main.class) {{
            if (!read) {{
                read = true;
                selected = readSelection();
            }}
        }}
        if (args.length == 0) {{
            System.err.println("usage: java {MAIN_CLASS} MAIN-CLASS [ARGUMENT...]");
            System.exit(2);
        }}
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        try {{
            main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
        }} catch (InvocationTargetException e) {{
            throw e.getCause();
        }}
    }}

    private static int readSelection() {{
        byte[] buffer = new byte[64];
        FileDescriptor fd = descriptor({FD});
        if (fd != null) {{
            FileInputStream in = new FileInputStream(fd);
            int value;
            try {{
                value = parse(buffer, in.getChannel().read(ByteBuffer.wrap(buffer), 0));
            }} catch (IOException e) {{ // not open, or a pipe: not ours
                value = -1;
            }}
            if (value < 0) {{
                notOurs = in;
                return 0;
            }}
            try {{
                in.close();
            }} catch (IOException e) {{
                // the number is read either way
            }}
            return value;
        }}
        // no Unsafe: a new descriptor of the same file (needs /proc); fd {FD} itself stays open
        try (FileInputStream in = new FileInputStream("/dev/fd/{FD}")) {{
            return Math.max(0, parse(buffer, in.getChannel().read(ByteBuffer.wrap(buffer), 0)));
        }} catch (IOException e) {{
            return 0;
        }}
    }}

    private static int parse(byte[] buffer, int length) {{
        if (length <= MAGIC.length()) {{
            return -1;
        }}
        for (int i = 0; i < MAGIC.length(); i++) {{
            if (buffer[i] != MAGIC.charAt(i)) {{
                return -1;
            }}
        }}
        int value = 0;
        int digits = 0;
        for (int i = MAGIC.length(); i < length && buffer[i] >= '0' && buffer[i] <= '9' && digits < 9; i++) {{
            value = value * 10 + (buffer[i] - '0');
            digits++;
        }}
        return digits == 0 ? -1 : value;
    }}

    /** A FileDescriptor for descriptor {{@code number}} itself (closing it closes that descriptor). */
    private static FileDescriptor descriptor(int number) {{
        try {{
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
            theUnsafe.setAccessible(true);
            Object unsafe = theUnsafe.get(null);
            Field fdField = FileDescriptor.class.getDeclaredField("fd");
            long offset = (Long) unsafeClass.getMethod("objectFieldOffset", Field.class).invoke(unsafe, fdField);
            FileDescriptor fd = new FileDescriptor();
            unsafeClass.getMethod("putInt", Object.class, long.class, int.class).invoke(unsafe, fd, offset, number);
            return fd;
        }} catch (Throwable e) {{
            return null;
        }}
    }}
}}
'''


class SchemataError(Exception):
    """The schemata build failed for a reason no site explains; one line."""


@dataclass
class Schemata:
    """A schemata build's layout: which mutants it holds and the number that selects each."""

    numbers: dict[str, int]  # mutant id -> the number fd 3 selects it with (1..)
    dropped: dict[str, str] = field(default_factory=dict)  # mutant id -> the compile error that dropped it
    builds: int = 0  # javac invocations until it compiled
    seconds: float = 0.0  # their wall time
    classes: Path | None = None  # the compiled production (and S, Main)


@dataclass
class _Rendered:
    text: str
    spans: list[tuple[int, int, int]]  # (start, end, site index): character offsets in ``text``
    kinds: list[str]  # per site: its kind
    methods: list[tuple[int, int]]  # per site: the first and last line of its method


def selection(number: int) -> bytes:
    """The content of the file a JVM gets as fd 3 to run mutant ``number``."""
    return f"{MAGIC} {number}\n".encode()


def _key(node: tree_sitter.Node) -> tuple[int, int, str]:
    return node.start_byte, node.end_byte, node.type


def render_file(data: bytes, sites: list[Site], numbers: list[list[int]]) -> _Rendered:
    """The file with every site of ``sites`` switched (``numbers[i]``: the numbers of site i's
    mutants, -1 for one not in the build); sites with no number stay as written."""
    tree = java_parser().parse(data)
    # keyed by span and type: ``sites`` come from another parse of the same bytes
    live = {_key(site.node): i for i, site in enumerate(sites) if any(n > 0 for n in numbers[i])}
    spans: list[tuple[int, int, int]] = []
    out: list[str] = []
    length = 0
    s = SWITCH

    def emit(text: str) -> None:
        nonlocal length
        out.append(text)
        length += len(text)

    def raw(start: int, end: int) -> None:
        emit(data[start:end].decode("utf-8"))

    def copy(node: tree_sitter.Node) -> None:
        """The node's text with every site under it switched."""
        index = live.get(_key(node))
        if index is None:
            copy_plain(node)
            return
        start = length
        _switch(node, sites[index], numbers[index])
        spans.append((start, length, index))

    def copy_plain(node: tree_sitter.Node) -> None:
        """The node itself as written, sites beneath it switched."""
        pos = node.start_byte
        for child in node.children:
            raw(pos, child.start_byte)
            copy(child)
            pos = child.end_byte
        raw(pos, node.end_byte)

    def operands(node: tree_sitter.Node, sep: str) -> None:
        """left, the text up to right with the operator replaced by ``sep``, right."""
        left, op, right = (node.child_by_field_name(f) for f in ("left", "operator", "right"))
        assert left is not None and op is not None and right is not None
        copy(left)
        raw(left.end_byte, op.start_byte)
        emit(sep)
        raw(op.end_byte, right.start_byte)
        copy(right)

    def statement(node: tree_sitter.Node, op: str | None) -> None:
        """An ``x op= y;`` statement, its operator replaced by ``op`` when given."""
        (assignment,) = [c for c in node.named_children if c.type == "assignment_expression"]
        operator = assignment.child_by_field_name("operator")
        assert operator is not None
        raw(node.start_byte, assignment.start_byte)
        pos = assignment.start_byte
        for child in assignment.children:
            raw(pos, child.start_byte)
            if child.id == operator.id and op is not None:
                emit(op)
            else:
                copy(child)
            pos = child.end_byte
        raw(pos, node.end_byte)

    def _switch(node: tree_sitter.Node, site: Site, nums: list[int]) -> None:
        if site.kind == "compare":
            boundary, negate = nums
            emit(f"{s}.{_COMPARE[site.op][0]}({boundary}, {negate}, ")
            operands(node, ",")
            emit(")")
        elif site.kind == "binary":
            emit(f"{s}.{_BINARY[site.op]}({nums[0]}, ")
            operands(node, ",")
            emit(")")
        elif site.kind == "equality":
            emit("((")
            copy_plain(node)
            emit(f") != {s}.on({nums[0]}))")
        elif site.kind == "logical":
            left, op, right = (node.child_by_field_name(f) for f in ("left", "operator", "right"))
            assert left is not None and op is not None and right is not None
            emit("((")
            copy(left)
            emit(")")
            raw(left.end_byte, op.start_byte)
            emit(f"{'!=' if site.op == '&&' else '=='} {s}.on({nums[0]}) ?")
            raw(op.end_byte, right.start_byte)
            emit("(")
            copy(right)
            emit(f") : {'' if site.op == '&&' else '!'}{s}.on({nums[0]}))")
        elif site.kind == "not":
            emit("(")
            copy_plain(node)
            emit(f" != {s}.on({nums[0]}))")
        elif site.kind == "neg":
            op, operand = node.child_by_field_name("operator"), node.child_by_field_name("operand")
            assert op is not None and operand is not None
            emit(f"{s}.neg({nums[0]}, ")
            raw(op.end_byte, operand.start_byte)
            copy(operand)
            emit(")")
        elif site.kind in ("literal", "bool"):
            emit(f"({s}.on({nums[0]}) ? {site.mutants[0][1]} : ")
            raw(node.start_byte, node.end_byte)
            emit(")")
        elif site.kind == "aug_assign":
            emit("{ " if site.braces else "")
            emit(f"if ({s}.on({nums[0]})) {{ ")
            statement(node, AUG_ASSIGN[site.op])
            emit(" } else { ")
            statement(node, None)
            emit(" }" + (" }" if site.braces else ""))
        elif site.kind == "return":
            emit(f"{{ if ({s}.on({nums[0]})) return {site.default}; ")
            copy_plain(node)
            emit(" }")
        elif site.kind == "call":
            emit(("{ " if site.braces else "") + f"if (!{s}.on({nums[0]})) {{ ")
            copy_plain(node)
            emit(" }" + (" }" if site.braces else ""))
        else:
            raise AssertionError(site.kind)

    root = tree.root_node
    raw(0, root.start_byte)
    copy(root)
    raw(root.end_byte, len(data))
    methods = [(site.method.line, site.method.node.end_point[0] + 1) for site in sites]
    return _Rendered("".join(out), spans, [site.kind for site in sites], methods)


def assign_numbers(mutants: Iterable[Mutant], order_seed: int | None = None) -> dict[str, int]:
    """Mutant id -> number: in source order (1, 2, ...), or with ``order_seed`` (a judge
    session's own) drawn at random from 1..2N, so that about N numbers select nothing."""
    ordered = sorted({m.id: m for m in mutants}.values(), key=lambda m: (m.file, m.line, m.col, m.id))
    if order_seed is None:
        return {m.id: i + 1 for i, m in enumerate(ordered)}
    drawn = random.Random(order_seed).sample(range(1, 2 * len(ordered) + 1), len(ordered))
    return {m.id: n for m, n in zip(ordered, drawn, strict=True)}


_Renderings = dict[str, tuple[list[list[str]], _Rendered]]  # file -> its sites' mutant ids, its rendering


def write_schemata(tree: Path, mutants: Iterable[Mutant], exclude: frozenset[str] = frozenset(),
                   order_seed: int | None = None) -> tuple[dict[str, int], _Renderings]:
    """Write the schemata of ``mutants`` (minus ``exclude``) into ``tree`` — a copy of the
    project the caller owns; each rewritten file is a new inode, so a hard-linked copy never
    changes the original — and the switch classes under ``SCHEMA_DIR``. Returns the numbers and,
    per file, its sites' mutant ids and its rendering (for error mapping). The numbers are the
    same whatever ``exclude`` is (``assign_numbers`` over all of ``mutants``)."""
    mutants = list(mutants)
    by_file: dict[str, list[Mutant]] = {}
    for mutant in mutants:
        by_file.setdefault(mutant.file, []).append(mutant)
    numbers = {i: n for i, n in assign_numbers(mutants, order_seed).items() if i not in exclude}
    rendered: _Renderings = {}
    for rel in sorted(by_file):
        path = tree / rel
        data = path.read_bytes()
        sites = file_sites(data)
        site_ids = [[m.id for m in site_mutants(rel, data, site)] for site in sites]
        site_numbers = [[numbers.get(i, -1) for i in ids] for ids in site_ids]
        result = render_file(data, sites, site_numbers)
        _replace(path, result.text)
        rendered[rel] = (site_ids, result)
    for path, text in schema_sources(tree).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, text)
    return numbers, rendered


def schema_sources(tree: Path) -> dict[Path, str]:
    """The switch classes' source files under ``tree`` and their text."""
    package = tree / SCHEMA_DIR / PACKAGE.replace(".", "/")
    return {package / "S.java": SWITCH_SOURCE, package / "Main.java": MAIN_SOURCE}


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".req2test-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def javac_flags(root: Path) -> list[str]:
    """The project's language level and encoding for javac, from a Maven ``pom.xml``:
    ``--release`` (``maven.compiler.release``, or the compiler plugin's ``<release>`` in the
    build or an active-by-default profile, ``${...}`` properties resolved) else ``-source`` and
    ``-target``; ``-encoding`` from ``project.build.sourceEncoding`` (UTF-8 when none)."""
    pom = root / "pom.xml"
    properties: dict[str, str] = {}
    settings: dict[str, str] = {}
    if pom.is_file():
        try:
            project = ET.parse(pom).getroot()
        except ET.ParseError:
            project = None
        if project is not None:
            def local(element: ET.Element) -> str:
                return element.tag.rsplit("}", 1)[-1]

            def child(element: ET.Element | None, name: str) -> ET.Element | None:
                return next((c for c in element if local(c) == name), None) if element is not None else None

            for prop in child(project, "properties") or []:
                properties[local(prop)] = (prop.text or "").strip()
            builds = [child(project, "build")]
            for profile in child(project, "profiles") or []:
                activation = child(profile, "activation")
                active = child(activation, "activeByDefault")
                if active is not None and (active.text or "").strip() == "true":
                    builds.append(child(profile, "build"))
            for build in builds:
                for plugin in child(build, "plugins") or []:
                    if (getattr(child(plugin, "artifactId"), "text", "") or "").strip() != "maven-compiler-plugin":
                        continue
                    for option in child(plugin, "configuration") or []:
                        if local(option) in ("release", "source", "target", "encoding") and option.text:
                            settings.setdefault(local(option), option.text.strip())
    for name in ("release", "source", "target"):
        settings.setdefault(name, properties.get(f"maven.compiler.{name}", ""))
    settings.setdefault("encoding", properties.get("project.build.sourceEncoding", "")
                        or properties.get("maven.compiler.encoding", ""))

    def resolve(value: str) -> str:
        for _ in range(5):
            value = re.sub(r"\$\{([^}]+)\}", lambda m: properties.get(m[1], m[0]), value)
        return value

    release, source, target = (resolve(settings.get(k, "")) for k in ("release", "source", "target"))
    flags = []
    if re.fullmatch(r"\d+", release):
        flags += ["--release", release]
    elif re.fullmatch(r"[\d.]+", source):
        flags += ["-source", source, "-target", target if re.fullmatch(r"[\d.]+", target) else source]
    return flags + ["-encoding", resolve(settings.get("encoding", "")) or "UTF-8"]


def _javac(toolchain: JavaToolchain | None) -> str:
    if toolchain is not None:
        sibling = Path(toolchain.java).resolve().parent / "javac"
        if sibling.is_file():
            return str(sibling)
    found = shutil.which("javac")
    if found is None:
        raise SchemataError("no javac on PATH: install a JDK (17 or newer)")
    return found


def compile_schemata(tree: Path, mutants: list[Mutant], original: Path, classpath: list[str],
                     toolchain: JavaToolchain | None = None, *, out: Path | None = None,
                     production: list[str] | None = None, flags: list[str] | None = None,
                     javac: str | None = None, max_builds: int = 30, order_seed: int | None = None,
                     timeout: float = 1800.0) -> Schemata:
    """Write and compile the schemata of ``mutants`` in ``tree``, dropping the sites javac
    refuses until the production compiles; ``original`` holds the unmodified files (each round
    rewrites from them). ``classpath``: the production's compile dependencies (jars, e.g.
    ``toolchain.build_classpath``'s). ``production``: what to compile, as given to
    ``generate_mutants`` (default: the mutants' files only, which must then not need the
    others). ``out``: where the classes go (default the tree's ``target/classes``, where Maven
    puts production and what ``runtime_classpath`` lists; resources Maven copied there stay).
    ``flags``: the language level and encoding (default ``javac_flags(original)``). ``javac``:
    default the toolchain's JDK, else ``javac`` on PATH."""
    compiler = javac or _javac(toolchain)
    out = out or tree / "target" / "classes"
    sources = sorted({m.file for m in mutants})
    files = production_files(tree, production) if production is not None else sources
    level = flags if flags is not None else javac_flags(original)
    dropped: dict[str, str] = {}
    result = Schemata(numbers={}, classes=out)
    started = time.monotonic()
    while True:
        for rel in sources:
            _replace(tree / rel, (original / rel).read_text(encoding="utf-8"))
        numbers, rendered = write_schemata(tree, mutants, frozenset(dropped), order_seed)
        paths = [tree / rel for rel in files] + list(schema_sources(tree))
        proc = _run_javac(compiler, out, classpath, level, paths, timeout)
        result.builds += 1
        if proc.returncode == 0:
            result.numbers, result.dropped = numbers, dropped
            result.seconds = time.monotonic() - started
            return result
        newly = _blame(proc.stdout + proc.stderr, rendered, tree, numbers)
        if not newly:
            errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "error" in line]
            raise SchemataError("the schemata build failed outside every mutation site: "
                                + (errors or (proc.stdout + proc.stderr).strip().splitlines() or ["no output"])[0])
        dropped.update(newly)
        if result.builds >= max_builds:
            raise SchemataError(f"the schemata build still fails after {max_builds} builds")


def _run_javac(javac: str, out: Path, classpath: list[str], flags: list[str], paths: list[Path],
               timeout: float) -> subprocess.CompletedProcess[str]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="req2test-javac-") as scratch:
        argfile = Path(scratch) / "sources"
        argfile.write_text("\n".join(_quote(str(p.resolve())) for p in paths) + "\n", encoding="utf-8")
        argv = [javac, "-J-Duser.language=en", "-J-Duser.country=US", "-d", str(out),
                "-cp", os.pathsep.join(classpath) or ".", "-proc:none", "-nowarn", "-g", "-implicit:none",
                "-Xmaxerrs", "100000", "-XDshould-stop.ifError=FLOW", f"-XDdiags.layout={_LAYOUT}",
                *flags, f"@{argfile}"]
        try:
            return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise SchemataError(f"javac timed out after {timeout:.0f} s") from exc


def _quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _blame(output: str, rendered: _Renderings, tree: Path, numbers: dict[str, int]) -> dict[str, str]:
    """Mutant id -> error, for the innermost site under each compile error (else ``_culprits``
    beside it)."""
    blamed: dict[str, str] = {}
    root = tree.resolve()
    by_path = {(root / rel).resolve(): rel for rel in rendered}
    utf16: dict[str, list[int]] = {}
    for line in output.splitlines():
        match = _ERROR.match(line.strip())
        if not match:
            continue
        rel = by_path.get(Path(match["file"]).resolve())
        if rel is None:
            continue
        site_ids, result = rendered[rel]
        text = result.text
        if rel not in utf16:  # javac counts UTF-16 units: character offset of each unit
            utf16[rel] = [i for i, c in enumerate(text) for _ in range(2 if ord(c) > 0xFFFF else 1)]
        units = utf16[rel]
        offset = int(match["offset"])
        if not 0 <= offset < len(units):
            continue
        offset = units[offset]
        lineno = text.count("\n", 0, offset) + 1
        chosen = _culprits(result, offset, lineno)
        for index in chosen:
            for mutant_id in site_ids[index]:
                if mutant_id in numbers:
                    blamed.setdefault(mutant_id, f"{rel}:{lineno}: {match['msg']}")
    return blamed


def _culprits(result: _Rendered, offset: int, lineno: int) -> list[int]:
    """The sites an error at ``offset`` (on ``lineno``) is blamed on: the innermost site around
    it, else the literals of its line, the other sites of its line, the literals of its method,
    its method's sites."""
    inside = [s for s in result.spans if s[0] <= offset < s[1]]
    if inside:
        size = min(s[1] - s[0] for s in inside)  # the innermost site
        return [s[2] for s in inside if s[1] - s[0] == size]
    text = result.text
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line_end = len(text) if line_end < 0 else line_end
    on_line = [s[2] for s in result.spans if s[0] < line_end and s[1] > line_start]
    in_method = [s[2] for s in result.spans if result.methods[s[2]][0] <= lineno <= result.methods[s[2]][1]]
    for candidates in (on_line, in_method):  # a switched literal is no constant: the usual culprit
        constants = [i for i in candidates if result.kinds[i] in ("literal", "bool")]
        if constants or candidates:
            return constants or candidates
    return []


def through_main(argv: list[str], main_class: str) -> list[str]:
    """``argv`` (a ``java`` command line) with the launcher ``Main`` before ``main_class``:
    ``java ... io.cucumber.core.cli.Main ARGS`` → ``java ... req2test.schema.Main
    io.cucumber.core.cli.Main ARGS``."""
    index = argv.index(main_class)
    return [*argv[:index], MAIN_CLASS, *argv[index:]]


def launch(argv: list[str], fd: int | None, memory_limit: int | None = None) -> tuple[list[str], dict[str, object]]:
    """The command and ``subprocess`` keyword arguments that start ``argv`` with ``fd`` (an open
    selection file, see ``selection``) as its fd 3 and nothing else of ours: bash moves the
    file to 3 (``3<&N N<&-``) and ``exec``s the JVM, which therefore sees only its own argv.
    ``close_fds`` stays on (``pass_fds`` keeps the file alone open across ``exec``), and nothing
    runs in the forked child before ``exec`` (no ``preexec_fn``: the callers are threads).
    ``memory_limit``: the heap in bytes, as ``-Xmx`` after ``argv[0]`` (which must be ``java``):
    a mutant that allocates without end fails with an ``OutOfMemoryError`` instead of taking the
    machine's memory before its timeout. (Not ``ulimit -v``: a JVM reserves gigabytes of address
    space up front and would not start.)"""
    if memory_limit is not None:
        if not argv or Path(argv[0]).name != "java":
            raise ValueError("memory_limit needs argv to start with java")
        argv = [argv[0], f"-Xmx{max(1, memory_limit >> 20)}m", *argv[1:]]
    redirect = f" {FD}<&{fd} {fd}<&-" if fd is not None and fd != FD else ""
    # bash, not sh: dash refuses a descriptor above 9 in a redirection ("Bad fd number")
    return [BASH, "-c", 'exec "$0" "$@"' + redirect, *argv], {"pass_fds": (fd,) if fd is not None else ()}


__all__ = ["FD", "MAGIC", "MAIN_CLASS", "SCHEMA_DIR", "SWITCH", "Schemata", "SchemataError", "assign_numbers",
           "compile_schemata", "javac_flags", "launch", "render_file", "schema_sources", "selection", "through_main",
           "write_schemata"]
