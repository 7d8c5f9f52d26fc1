"""The static screen of submitted Java (``bench.frameworks.cucumber_jvm.screen``): each route into
the JVM, the switch or the run's report is refused with a reason; ordinary test idioms never
are; no glue file of java-algorand-sdk is flagged (its oracle must pass the calibration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.frameworks.cucumber_jvm.screen import screen, translate_unicode_escapes

STEPS = "src/test/java/com/example/steps/CartSteps.java"
HEAD = "package com.example.steps;\n\n{imports}\n\npublic class CartSteps {{\n{body}\n}}\n"


def _file(body: str, imports: str = "") -> dict[str, str]:
    return {STEPS: HEAD.format(imports=imports, body=body)}


def _method(statements: str) -> str:
    return f'    @Then("the cart holds {{int}}")\n    public void holds(int n) throws Exception {{\n{statements}\n    }}'


# name -> (imports, body, a word the reason must hold)
ATTACKS = {
    "unsafe import": ("import sun.misc.Unsafe;", _method("        Object u = null;"), "internals"),
    "unsafe qualified": ("", _method("        sun.misc.Unsafe u = null;"), "internals"),
    "jdk internal": ("import jdk.internal.misc.VM;", _method(""), "internals"),
    "set accessible": ("import java.lang.reflect.Field;",
                       _method('        Field f = Object.class.getField("x");\n        f.setAccessible(true);'),
                       "setAccessible"),
    "declared field": ("", _method('        Object v = String.class.getDeclaredField("value");'), "non-public"),
    "declared methods": ("", _method("        Object v = String.class.getDeclaredMethods();"), "non-public"),
    "declared constructor": ("", _method("        Object v = String.class.getDeclaredConstructor();"), "non-public"),
    "get method invoke": ("", _method('        Object.class.getMethod("on", int.class).invoke(null, 3);'), "reflection"),
    "private lookup": ("import java.lang.invoke.MethodHandles;",
                       _method("        MethodHandles.privateLookupIn(String.class, MethodHandles.lookup());"),
                       "method handles"),
    "var handle": ("", _method("        java.lang.invoke.VarHandle h = null;"), "handles"),
    "lookup find static": ("", _method(
        '        java.lang.invoke.MethodHandles.lookup().findStatic(Object.class, "on", null);'), "method handles"),
    "req2test import": ("import req2test.schema.S;", _method("        S.on(3);"), "switch"),
    "req2test qualified": ("", _method("        boolean on = req2test.schema.S.on(3);"), "switch"),
    "req2test string": ("", _method('        Class<?> c = Class.forName("req2test.schema.S");'), "switch"),
    "unicode escaped name": ("", _method("        boolean on = \\u0072eq2test.schema.S.on(3);"), "switch"),
    "code hidden in a comment": ("", _method("        // \\u000a System.exit(0);"), "exit"),
    "computed class name": ("", _method('        Class<?> c = Class.forName("req" + n + "test");'), "computed"),
    "class loader": ("", _method('        ClassLoader l = getClass().getClassLoader();'), "class loader"),
    "url class loader": ("import java.net.URLClassLoader;", _method(""), "class loader"),
    "load class": ("", _method('        getClass().getClassLoader().loadClass("x.Y");'), "loads classes"),
    "define class": ("", _method("        Object c = defineClass(null, null, 0, 0);"), "defines classes"),
    "instrumentation": ("import java.lang.instrument.Instrumentation;", _method(""), "instruments"),
    "process builder": ("", _method('        new ProcessBuilder("ls").start();'), "processes"),
    "runtime exec": ("", _method('        Runtime.getRuntime().exec("ls");'), "processes"),
    "system exit": ("", _method("        System.exit(0);"), "exit"),
    "static exit": ("import static java.lang.System.exit;", _method("        exit(0);"), "exit"),
    "exit reference": ("", _method("        java.util.function.IntConsumer e = System::exit;"), "exit"),
    "runtime halt": ("", _method("        Runtime.getRuntime().halt(0);"), "halt"),
    "shutdown hook": ("", _method("        Runtime.getRuntime().addShutdownHook(new Thread(() -> {}));"), "report"),
    "native method": ("", "    private static native int active();", "native"),
    "load library": ("", _method('        System.loadLibrary("x");'), "native"),
    "system load": ("", _method('        System.load("/tmp/x.so");'), "native"),
    "class file resource": ("", _method(
        '        Object in = getClass().getResourceAsStream("/com/example/Cart.class");'), "class file"),
    "java source read": ("", _method(
        '        byte[] b = java.nio.file.Files.readAllBytes(java.nio.file.Paths.get("Cart.java"));'), "source"),
    "production sources": ("", _method('        java.io.File f = new java.io.File("src/main/java/com/example");'),
                           "production"),
    "proc": ("", _method('        java.nio.file.Files.readAllBytes(java.nio.file.Paths.get("/proc/self/cmdline"));'),
             "/proc"),
    "dev fd": ("", _method('        new java.io.FileInputStream("/dev/fd/3");'), "descriptor"),
    "file descriptor": ("import java.io.FileDescriptor;", _method("        Object fd = new FileDescriptor();"),
                        "descriptor"),
    "sun internals": ("import com.sun.management.OperatingSystemMXBean;", _method(""), "internals"),
    "management": ("import java.lang.management.ManagementFactory;",
                   _method("        ManagementFactory.getRuntimeMXBean().getInputArguments();"), "management"),
    "class path property": ("", _method('        String cp = System.getProperty("java.class.path");'), "class path"),
    "command property": ("", _method('        String cp = System.getProperty("sun.java.command");'), "command line"),
    "computed property": ("", _method('        String cp = System.getProperty("java." + n);'), "computed"),
    "all properties": ("", _method("        Object p = System.getProperties();"), "property"),
    "all stack traces": ("", _method("        Object t = Thread.getAllStackTraces();"), "stack"),
    "stack walker": ("", _method("        StackWalker.getInstance().walk(s -> s.count());"), "stack"),
    "stack trace": ("", _method("        Object t = new Exception().getStackTrace();"), "stack"),
    "code source": ("", _method("        Object l = getClass().getProtectionDomain().getCodeSource();"), "class path"),
    "field utils": ("import org.apache.commons.lang3.reflect.FieldUtils;",
                    _method('        FieldUtils.readStaticField(Object.class, "ACTIVE", true);'), "force access"),
    "whitebox": ("import org.powermock.reflect.Whitebox;", _method(""), "force access"),
    "asm": ("import org.objectweb.asm.ClassReader;", _method(""), "class files"),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_route_is_refused_with_a_reason(name: str) -> None:
    imports, body, reason = ATTACKS[name]
    findings = screen(_file(body, imports))
    assert findings, name
    assert all(f.startswith(f"{STEPS}:") for f in findings), findings
    assert any(reason.lower() in f.lower() for f in findings), findings


ORDINARY_IMPORTS = """import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.Assert.assertEquals;
import static org.hamcrest.MatcherAssert.assertThat;
import static org.hamcrest.Matchers.is;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cucumber.java.en.Given;
import io.cucumber.java.en.Then;
import io.cucumber.java.en.When;
import java.io.File;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import org.mockito.Mockito;"""

ORDINARY_BODY = """    private static final ObjectMapper MAPPER = new ObjectMapper();
    private final List<String> items = Mockito.mock(List.class);
    private String name;

    @Given("a cart named {string}")
    public void aCart(String name) throws Exception {
        this.name = name + getClass().getSimpleName();
        Class<?> type = Class.forName("java.util.ArrayList");
        Mockito.when(items.size()).thenReturn(3);
        JsonNode node = MAPPER.readTree(new File("src/test/resources/fixtures/cart.json"));
        byte[] raw = Files.readAllBytes(Paths.get("src/test/resources/responses", name + ".json"));
        try (InputStream in = getClass().getResourceAsStream("/fixtures/cart.json")) {
            assertThat(in).isNotNull();
        }
        InputStream again = Thread.currentThread().getContextClassLoader().getResourceAsStream("cart.json");
        String home = System.getProperty("user.dir") + System.getenv("HOME");
        assertEquals(3, items.size());
        assertThat(node.get("total").asInt(), is(3));
        new String(raw, StandardCharsets.UTF_8).trim();
    }

    @Then("the class is {string}")
    public void theClassIs(String expected) {
        // a comment may say setAccessible, /proc or System.exit without doing it
        String text = "the processing of a procedure";
        assertThat(items.getClass().getName()).contains(expected);
        Runtime.getRuntime().availableProcessors();
        Mockito.verify(items).size();
    }"""


def test_ordinary_test_idioms_are_never_refused() -> None:
    assert screen(_file(ORDINARY_BODY, ORDINARY_IMPORTS)) == []


def test_unicode_escapes_are_translated_like_javac() -> None:
    assert translate_unicode_escapes("\\u0072eq") == "req"
    assert translate_unicode_escapes("\\uu0072eq") == "req"  # any number of u's
    assert translate_unicode_escapes("\\\\u0072eq") == "\\\\u0072eq"  # an escaped backslash escapes nothing
    assert translate_unicode_escapes("a\\u000ab") == "a\nb"


SHIPPED = """    public static void infect(Object client) throws IllegalAccessException {
        FieldUtils.writeField(client, "client", new Object(), true);
    }"""


def test_the_projects_own_infrastructure_is_not_the_submissions_doing() -> None:
    """java-algorand-sdk's ClientMocker writes a mock into a private field with FieldUtils; the
    oracle submits it as shipped."""
    imports = "import org.apache.commons.lang3.reflect.FieldUtils;"
    files = _file(SHIPPED, imports)
    assert screen(files)  # new code may not force access ...
    assert screen(files, shipped=files) == []  # ... the declarations the project shipped may
    changed = {k: v.replace('"client"', '"active"') for k, v in files.items()}
    assert any("FieldUtils" in f for f in screen(changed, shipped=files))
    # a shipped declaration launders neither another forbidden import nor a new use
    more = _file(SHIPPED + "\n" + _method('        FieldUtils.readStaticField(Object.class, "x", true);'), imports)
    assert any("FieldUtils" in f for f in screen(more, shipped=files))
    unsafe = _file(SHIPPED, imports + "\nimport sun.misc.Unsafe;")
    assert any("internals" in f for f in screen(unsafe, shipped=files))


def test_non_java_files_are_not_screened() -> None:
    assert screen({"src/test/resources/x.feature": "Given System.exit(0) in /proc"}) == []


CORPUS = Path("/work/corpora/java-algorand-sdk")
GLUE = ("src/test/java/com/algorand/algosdk/unit", "src/test/java/com/algorand/algosdk/cucumber/shared")


@pytest.mark.skipif(not (CORPUS / GLUE[0]).is_dir(), reason="the java-algorand-sdk corpus is not here")
def test_no_glue_file_of_java_algorand_sdk_is_flagged() -> None:
    files = {p.relative_to(CORPUS).as_posix(): p.read_text(encoding="utf-8")
             for directory in GLUE for p in sorted((CORPUS / directory).rglob("*.java"))}
    assert len(files) >= 15
    assert screen(files, shipped=files) == []
    # every step file alone, as an oracle submits it
    for rel, text in files.items():
        assert screen({rel: text}, shipped=files) == [], rel
    # and what the shipped exemption is needed for: ClientMocker's forced write, and nothing else
    flagged = {f.split(":")[0] for f in screen(files)}
    assert flagged <= {f"{GLUE[0]}/utils/ClientMocker.java", f"{GLUE[0]}/utils/TestingUtils.java"}, flagged
