"""The static screen of submitted Java step code: what a step method has no use for, and what it
would need to reach the selected mutant, the judge's machinery or the run's report.

The screen is the second line, not the first. By construction (``judge``) the variant a run
executes is a number the launcher ``req2test.schema.Main`` reads from fd 3 and closes before
any class of the class path loads; every variant — the clean run, each mutant, each null
variant and each unreached mutant (``judge``'s decoys) — runs the same class path and the same
argv in a fresh JVM in bubblewrap without ``/proc``, whose tree holds no ``.java`` file and no
``target/``. A test can only tell a mutant from the original by behaviour unless it reaches
into the JVM, which is what the screen refuses (tree-sitter-java over the submitted ``.java``
files, after Java's own ``\\uXXXX`` translation, so an escaped name or a line break hidden in a
comment is seen as javac sees it):

- JVM internals: ``sun.*``, ``com.sun.*``, ``jdk.*`` (``sun.misc.Unsafe``, ``jdk.internal``),
  ``java.lang.instrument``, ``java.lang.management``/``javax.management``, ``java.lang.invoke``
  (``MethodHandles.privateLookupIn``, ``VarHandle``, ``lookup().findStatic``…), ``Unsafe``;
- reflection that opens access or reads non-public members: ``setAccessible``,
  ``trySetAccessible``, ``getDeclaredField(s)``/``Method(s)``/``Constructor(s)``/``Classes``,
  ``getMethod(s)`` (the way to call a public method of a class found by name: the switch's
  helpers are public), reflection helpers that force access (commons-lang3's
  ``FieldUtils``/``MethodUtils``/``ConstructorUtils``, Spring's ``ReflectionUtils``,
  PowerMock's ``Whitebox``, Mockito's internal ``FieldSetter``/``FieldReader``), bytecode
  libraries (ASM, Javassist, ByteBuddy used directly);
- class loading: ``ClassLoader`` and its subclasses, ``loadClass``, ``defineClass``,
  ``Instrumentation``, and ``Class.forName`` of anything but a string literal (a literal naming
  a public class is an ordinary idiom; a computed name is how a screen is walked around);
- the name ``req2test`` anywhere (the switch's package);
- processes and the JVM's life: ``ProcessBuilder``, ``Runtime.exec``, ``ProcessHandle``,
  ``System.exit``, ``Runtime.halt``, ``addShutdownHook`` (code that runs after cucumber wrote
  its report could rewrite it), ``setSecurityManager``;
- native code: ``native`` methods, ``System.load``/``loadLibrary``;
- the process as data: ``/proc``, ``/dev/fd``, ``/dev/mem``, ``FileDescriptor``; the command
  line and the class path (``System.getProperties``, the properties ``java.class.path``,
  ``sun.java.command``…), ``getProtectionDomain``/``getCodeSource``;
- the call stack: ``Thread.getAllStackTraces``, ``StackWalker``, ``getStackTrace`` (the
  runner's frames are the only thing that tells the traced run from a verdict run);
- code as data: a string literal naming a ``.class`` or ``.java`` file, ``src/main/``,
  ``target/classes``.

Never an ordinary test idiom: assertions (JUnit, AssertJ, Hamcrest), Mockito (it uses
reflection inside the library: that is not the test calling ``setAccessible``), Jackson's
``ObjectMapper``, ``getClass().getSimpleName()``, ``Class.forName("a.Literal")``, reading
fixtures under ``src/test/resources`` (``new File(...)``, ``Files.readAllBytes``,
``getResourceAsStream("x.json")``). No glue file of java-algorand-sdk is flagged (its
``ClientMocker.infect`` writes a mock into a private field with ``FieldUtils``: a declaration
that is, token for token, one the project shipped is the project's infrastructure, not the
submission's doing; an import the shipped files make is allowed, and each use of it outside
such a declaration is a finding).

**What in-process Java can still do** (the screen is a list of names, and Java is dynamic):

- reach a class and call its public methods through a route the screen does not list (a
  library that loads classes by name, e.g. Jackson's ``TypeFactory.findClass`` or polymorphic
  typing, fed a string built at run time; ``java.beans.Expression``/``Statement``, which call a
  public method by its name; the integration tests do exactly this). What it reaches is public
  API only — ``setAccessible`` and the forced-access helpers are refused — but the switch's
  helpers are public (``S.on(n)``), and tell it *which number* is active.
  That number means nothing by itself: the number→mutant mapping is drawn anew every judge
  session (``order_seed``), the clean run itself runs a null number (no site uses it), and null
  variants are interleaved exactly like mutants, so "some number is active" fails the clean run
  or a null variant → ``tampering``/``unstable``;
- read class files of production as resources or from the class path (the JVM must be able to
  read them, so the sandbox cannot hide them) and, from their constant pools, learn which
  numbers some site uses. Unreached mutants (``judge``'s decoys: real mutants on lines the
  prediction's own traced run never executed, whose numbers sites do use) are interleaved like
  kills, so "a number some site uses is active" fails a decoy → ``tampering``/``unstable``.
  What remains is a test that parses the bytecode of exactly the methods it executes and fails
  when one of *their* sites is active (or one that tells its traced run — plain classes, the
  JaCoCo agent — from the verdict runs and inflates its coverage there, leaving no decoys): that
  needs a reflective route to ``S`` the screen missed plus a constant-pool parser in a step
  definition; the screen and the evidence in the results are the only defence against it;
- anything a test can do to its own JVM by behaviour alone (sleep, allocate, throw, print): it
  moves the clean run, the null variants and the mutants alike — it can fail the clean run or
  survive every mutant, never kill one mutant and spare the original.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter

from bench.frameworks.cucumber_jvm.syntax import java_parser

# package prefixes (imports, fully qualified names in code) -> why a step has no business there
FORBIDDEN_PACKAGES = {
    "sun.": "reaches JVM internals (sun.*)",
    "com.sun.": "reaches JVM internals (com.sun.*)",
    "jdk.": "reaches JDK internals (jdk.*)",
    "java.lang.instrument": "instruments classes (java.lang.instrument)",
    "java.lang.management": "reads the JVM's management interface (its arguments, its threads)",
    "javax.management": "reads the JVM's management interface (its arguments, its threads)",
    "java.lang.invoke": "uses method handles or VarHandles (reflective access around Java's checks)",
    "org.apache.commons.lang3.reflect": "uses reflection helpers that force access to private members",
    "org.springframework.util.ReflectionUtils": "uses reflection helpers that force access to private members",
    "org.springframework.test.util.ReflectionTestUtils": "uses reflection helpers that force access to private "
                                                          "members",
    "org.powermock.reflect": "uses reflection helpers that force access to private members",
    "org.mockito.internal.util.reflection": "uses reflection helpers that force access to private members",
    "org.junit.platform.commons.util.ReflectionUtils": "uses reflection helpers that force access to private "
                                                       "members",
    "org.objectweb.asm": "reads or writes class files (ASM)",
    "javassist": "reads or writes class files (Javassist)",
    "net.bytebuddy": "defines classes or attaches an agent (ByteBuddy)",
    "org.objenesis": "instantiates classes without their constructors",
    "req2test": "names the mutant switch's package",
}
# identifiers (types, variables, qualified names) -> why
FORBIDDEN_NAMES = {
    "Unsafe": "reads or writes memory around Java's checks (Unsafe)",
    "ClassLoader": "loads or defines classes (a class loader)",
    "URLClassLoader": "loads or defines classes (a class loader)",
    "SecureClassLoader": "loads or defines classes (a class loader)",
    "Instrumentation": "instruments classes (java.lang.instrument)",
    "ClassFileTransformer": "instruments classes (java.lang.instrument)",
    "ProcessBuilder": "starts processes",
    "ProcessHandle": "inspects processes",
    "FileDescriptor": "names a raw file descriptor",
    "StackWalker": "reads the call stack (the runner's frames)",
    "ManagementFactory": "reads the JVM's management interface (its arguments, its threads)",
    "RuntimeMXBean": "reads the JVM's management interface (its arguments, its threads)",
    "MethodHandles": "uses method handles (reflective access around Java's checks)",
    "VarHandle": "uses VarHandles (reflective access around Java's checks)",
    "FieldUtils": "uses reflection helpers that force access to private members",
    "MethodUtils": "uses reflection helpers that force access to private members",
    "ConstructorUtils": "uses reflection helpers that force access to private members",
    "ReflectionUtils": "uses reflection helpers that force access to private members",
    "ReflectionTestUtils": "uses reflection helpers that force access to private members",
    "Whitebox": "uses reflection helpers that force access to private members",
    "FieldSetter": "uses reflection helpers that force access to private members",
    "FieldReader": "uses reflection helpers that force access to private members",
}
# method names (whatever the receiver) -> why
FORBIDDEN_METHODS = {
    "setAccessible": "opens access to a private member (setAccessible)",
    "trySetAccessible": "opens access to a private member (trySetAccessible)",
    "getDeclaredField": "reads a class's non-public members (getDeclaredField)",
    "getDeclaredFields": "reads a class's non-public members (getDeclaredFields)",
    "getDeclaredMethod": "reads a class's non-public members (getDeclaredMethod)",
    "getDeclaredMethods": "reads a class's non-public members (getDeclaredMethods)",
    "getDeclaredConstructor": "reads a class's non-public members (getDeclaredConstructor)",
    "getDeclaredConstructors": "reads a class's non-public members (getDeclaredConstructors)",
    "getDeclaredClasses": "reads a class's non-public members (getDeclaredClasses)",
    "getMethod": "calls methods by reflection (getMethod)",
    "getMethods": "calls methods by reflection (getMethods)",
    "privateLookupIn": "opens private access through method handles (privateLookupIn)",
    "defineClass": "defines classes at run time",
    "defineHiddenClass": "defines classes at run time",
    "loadClass": "loads classes through a class loader",
    "getSystemClassLoader": "loads classes through the system class loader",
    "getPlatformClassLoader": "loads classes through the platform class loader",
    "getAllStackTraces": "reads every thread's stack (the runner's frames)",
    "getStackTrace": "reads the call stack (the runner's frames)",
    "addShutdownHook": "runs code after the run ends (after cucumber wrote its report)",
    "halt": "ends the JVM at once (Runtime.halt)",
    "loadLibrary": "loads native code (JNI)",
    "getProtectionDomain": "reads where classes were loaded from (the class path)",
    "getCodeSource": "reads where classes were loaded from (the class path)",
    "setSecurityManager": "changes the JVM's security manager",
    "getInputArguments": "reads the JVM's command line",
}
# System./Runtime. methods whose name alone is too common to refuse everywhere
RECEIVER_METHODS = {
    "exit": "ends the JVM (System.exit): the run never reports",
    "exec": "starts processes (Runtime.exec)",
    "load": "loads native code (JNI)",
    "getProperties": "reads every system property (the command line, the class path)",
    "getenv": None,  # allowed: the environment is the same for every run
}
RECEIVERS = re.compile(r"(?:^|\.)(?:System|Runtime|getRuntime\(\))$")
# system properties that describe the JVM's command line or class path
FORBIDDEN_PROPERTIES = ("java.class.path", "sun.", "jdk.", "java.library.path", "java.home", "java.vm.",
                        "java.rmi.")
STRING_MARKERS = (
    (re.compile(r"/proc(?:/|$)|^proc/"), "names the process file system (/proc)"),
    (re.compile(r"/dev/fd|/dev/(?:k?mem|stdin)"), "names the process's file descriptors or memory"),
    (re.compile(r"req2test"), "names the mutant switch's package"),
    (re.compile(r"\.(?:class|java)\s*$"), "names a class file or a Java source (code read as data)"),
    (re.compile(r"src/main/|target/classes|target/test-classes"), ("names the production sources or the "
                                                                   "compiled classes (code read as data)")),
    (re.compile(r"^(?:sun\.misc|jdk\.internal|sun\.reflect|com\.sun\.)"), "names JVM internals"),
)
MEMBERS = ("method_declaration", "constructor_declaration", "field_declaration", "static_initializer", "block",
           "compact_constructor_declaration", "class_declaration", "interface_declaration", "enum_declaration",
           "record_declaration", "annotation_type_declaration")
_UNICODE_ESCAPE = re.compile(r"\\+u+([0-9a-fA-F]{4})")


def translate_unicode_escapes(text: str) -> str:
    """Java's first lexical step (JLS 3.3): every ``\\uXXXX`` whose backslash is not itself
    escaped becomes its character, in comments and strings too (``\\u000a`` ends a comment)."""

    def one(match: re.Match[str]) -> str:
        raw = match.group(0)
        slashes = len(raw) - len(raw.lstrip("\\"))
        if slashes % 2 == 0:
            return raw
        return "\\" * (slashes - 1) + chr(int(match.group(1), 16))

    return _UNICODE_ESCAPE.sub(one, text)


def screen(files: dict[str, str], shipped: dict[str, str] | None = None) -> list[str]:
    """Findings (``path:line: why (what)``); empty when nothing was found.

    ``shipped``: the glue files as the project ships them. A finding inside a declaration (a
    member or a type) that is, token for token, one the project shipped is the project's own
    infrastructure; a forbidden import the shipped files make too is allowed, and each use of
    it outside such a declaration is a finding instead."""
    parser = java_parser()
    trusted: set[str] = set()
    shipped_imports: set[str] = set()
    for text in (shipped or {}).values():
        root = parser.parse(translate_unicode_escapes(text).encode("utf-8")).root_node
        for node in _walk(root):
            if node.type in MEMBERS and (node.type != "block" or _is_initializer(node)):
                trusted.add(_normal(node))
            elif node.type == "import_declaration":
                shipped_imports.add(_import_path(node))
    findings: list[str] = []
    for path, text in sorted(files.items()):
        if not path.endswith(".java"):
            continue
        root = parser.parse(translate_unicode_escapes(text).encode("utf-8")).root_node
        for node, finding in _findings(path, root, shipped_imports):
            if _in_trusted(node, trusted):
                continue
            findings.append(finding)
    return findings


def _walk(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def _is_initializer(node: tree_sitter.Node) -> bool:
    return node.parent is not None and node.parent.type in ("class_body", "enum_body_declarations")


def _in_trusted(node: tree_sitter.Node, trusted: set[str]) -> bool:
    current: tree_sitter.Node | None = node
    while current is not None:
        if current.type in MEMBERS and (current.type != "block" or _is_initializer(current)) \
                and _normal(current) in trusted:
            return True
        current = current.parent
    return False


def _text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text is not None else ""


def _normal(node: tree_sitter.Node) -> str:
    return " ".join(_text(node).split())


def _import_path(node: tree_sitter.Node) -> str:
    return "".join(_text(node).split()).removeprefix("import").removeprefix("static").rstrip(";")


def _string_value(node: tree_sitter.Node) -> str:
    return "".join(_text(c) for c in node.children if c.type in ("string_fragment", "multiline_string_fragment",
                                                                  "escape_sequence"))


def _package_reason(name: str) -> str | None:
    """Why ``name`` (a qualified name, an import path) lies in a forbidden package, else None."""
    for prefix, why in FORBIDDEN_PACKAGES.items():
        if name.startswith(prefix) if prefix.endswith(".") else (name == prefix or name.startswith(prefix + ".")):
            return why
    return None


def _findings(path: str, root: tree_sitter.Node,
              shipped_imports: set[str]) -> Iterator[tuple[tree_sitter.Node, str]]:
    allowed: dict[str, str] = {}  # simple names a shipped forbidden import brings in -> why
    for node in _walk(root):
        line = node.start_point[0] + 1
        kind = node.type
        where = f"{path}:{line}"
        if kind == "import_declaration":
            imported = _import_path(node)
            why = _package_reason(imported)
            if why is None:
                leaf = imported.rsplit(".", 1)[-1]
                why = FORBIDDEN_NAMES.get(leaf) or FORBIDDEN_METHODS.get(leaf)
                if why is None and imported.startswith(("java.lang.System.", "java.lang.Runtime.")):
                    why = RECEIVER_METHODS.get(leaf)
            if why is not None and imported in shipped_imports and "switch" not in why:
                allowed[imported.rsplit(".", 1)[-1]] = why
            elif why is not None:
                yield node, f"{where}: {why} (import {imported})"
            continue
        if kind in ("scoped_identifier", "scoped_type_identifier", "field_access") and (
                node.parent is None or node.parent.type not in ("scoped_identifier", "scoped_type_identifier",
                                                                "field_access", "import_declaration",
                                                                "package_declaration")):
            name = "".join(_text(node).split())
            why = _package_reason(name)
            if why is not None:
                yield node, f"{where}: {why} ({name[:80]})"
        elif kind in ("identifier", "type_identifier") and not _inside(node, ("import_declaration",
                                                                               "package_declaration")):
            name = _text(node)
            if name in allowed and not _is_method_name(node):
                yield node, f"{where}: {allowed[name]} ({name})"
            elif name in FORBIDDEN_NAMES and not _is_method_name(node):
                yield node, f"{where}: {FORBIDDEN_NAMES[name]} ({name})"
            elif "req2test" in name:
                yield node, f"{where}: names the mutant switch's package ({name})"
        elif kind in ("method_invocation", "method_reference"):
            yield from _call_findings(node, where)
        elif kind == "modifiers" and any(c.type == "native" for c in node.children):
            yield node, f"{where}: declares a native method (JNI)"
        elif kind == "string_literal":
            value = _string_value(node)
            for pattern, why in STRING_MARKERS:
                if pattern.search(value):
                    yield node, f"{where}: {why} ({value[:60]!r})"
                    break
        elif kind in ("line_comment", "block_comment") and "req2test" in _text(node):
            yield node, f"{where}: names the mutant switch's package (in a comment)"


def _inside(node: tree_sitter.Node, kinds: tuple[str, ...]) -> bool:
    current = node.parent
    while current is not None:
        if current.type in kinds:
            return True
        current = current.parent
    return False


def _is_method_name(node: tree_sitter.Node) -> bool:
    """``node`` is the name of an invoked or declared method (``x.ClassLoader()`` is not a type)."""
    parent = node.parent
    return parent is not None and parent.type in ("method_invocation", "method_declaration") \
        and parent.child_by_field_name("name") == node


def _call_findings(node: tree_sitter.Node, where: str) -> Iterator[tuple[tree_sitter.Node, str]]:
    if node.type == "method_invocation":
        name = _text(node.child_by_field_name("name"))
        receiver = node.child_by_field_name("object")
        arguments = node.child_by_field_name("arguments")
        args = [a for a in arguments.named_children if a.type not in ("line_comment", "block_comment")] \
            if arguments is not None else []
    else:  # method_reference: Receiver::name
        named = [c for c in node.named_children if c.type not in ("line_comment", "block_comment")]
        name = _text(named[-1]) if len(named) > 1 else ""
        receiver = named[0] if len(named) > 1 else None
        args = []
    owner = "".join(_text(receiver).split()) if receiver is not None else ""
    if name in FORBIDDEN_METHODS:
        yield node, f"{where}: {FORBIDDEN_METHODS[name]} ({(owner + '.' if owner else '') + name})"
    elif name in RECEIVER_METHODS and RECEIVER_METHODS[name] is not None and (
            RECEIVERS.search(owner) or (not owner and name == "exit")):
        yield node, f"{where}: {RECEIVER_METHODS[name]} ({(owner + '.' if owner else '') + name})"
    elif name == "forName" and (owner.endswith("Class") or not owner):
        first = args[0] if args else None
        if node.type == "method_reference" or first is None or first.type != "string_literal":
            yield node, f"{where}: loads a class by a computed name (Class.forName)"
        elif (why := _package_reason(_string_value(first))) is not None:
            yield node, f"{where}: {why} (Class.forName({_string_value(first)[:60]!r}))"
    elif name in ("getProperty", "clearProperty", "setProperty") and RECEIVERS.search(owner) and args:
        first = args[0]
        value = _string_value(first) if first.type == "string_literal" else None
        if value is None and name == "getProperty":
            yield node, f"{where}: reads a system property by a computed name"
        elif value is not None and value.startswith(FORBIDDEN_PROPERTIES):
            yield node, f"{where}: reads the JVM's command line or class path (System.{name}({value!r}))"


__all__ = ["screen", "translate_unicode_escapes"]
