// A judge's verdict JVM, restored from a checkpoint (restored.py). Started once per judge
// session, before any class of the project exists in it: it loads (without initialising: a
// static initialiser runs during a run, as in a started JVM) every class of its class path's
// jars (the dependencies: cucumber, the libraries), warms cucumber on a feature of its own with
// no glue, and then waits for a command file. criu dumps it there. Its class path is the jars
// and the session's resource directories, in the started JVM's order, so a library finds its
// configuration (logback-test.xml...) as it would there.
// Every verdict run restores that image in a fresh sandbox and hands it one command:
//
//   NUMBER <n>                 the schemata's selected number (written into SWITCH's field)
//   SWITCH <class> <field>     where the schemata launcher keeps it (req2test.schema.Main)
//   DIR <path>                 a class directory of the run, in class-path order
//   OUTPUT <path>              where the run's stdout and stderr go
//   ARG <argument>             cucumber's command line, one argument a line
//
// It reads the file, deletes it, and only then creates the run's class loader over the DIRs:
// no class of the prediction, the project or the production loads before the number is out of
// every file. The run is cucumber's own Main.run; the JVM then exits with its status, as
// cucumber's Main.main would. "READY" (beside the command file) tells the dumper it is waiting;
// "RESTORED" (in the run's output directory) tells the judge a command was taken — never when
// /proc is still there (the judge then runs a started JVM instead).
import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

public final class Zygote {
    public static void main(String[] args) throws Exception {
        Path command = Paths.get(args[0]);
        Path warmFeature = Paths.get(args[1]);
        Path warmReport = Paths.get(args[2]);
        int warmRuns = Integer.parseInt(args[3]);
        PrintStream sink = new PrintStream(OutputStream.nullOutputStream(), true, "UTF-8");
        System.setOut(sink);
        System.setErr(sink);
        ClassLoader jars = Zygote.class.getClassLoader();
        preload(jars);
        Method run = Class.forName("io.cucumber.core.cli.Main", true, jars)
            .getMethod("run", String[].class, ClassLoader.class);
        for (int i = 0; i < warmRuns; i++) {
            run.invoke(null, new String[] {"--monochrome", "--glue", "req2test.zygote.none", "--plugin",
                "json:" + warmReport, warmFeature.toString()}, new URLClassLoader(new URL[0], jars));
        }
        Files.deleteIfExists(warmReport);
        System.gc();
        Files.writeString(Paths.get(command + ".READY"), "waiting\n");
        while (!Files.exists(command)) {
            Thread.sleep(1);
        }
        // ---- restored: one verdict run
        List<String> lines = Files.readAllLines(command, StandardCharsets.UTF_8);
        Files.delete(command);
        int number = 0;
        String switchAt = null;
        String output = null;
        List<URL> dirs = new ArrayList<>();
        List<String> argv = new ArrayList<>();
        for (String line : lines) {
            if (line.startsWith("NUMBER ")) {
                number = Integer.parseInt(line.substring(7));
            } else if (line.startsWith("SWITCH ")) {
                switchAt = line.substring(7);
            } else if (line.startsWith("DIR ")) {
                dirs.add(Paths.get(line.substring(4)).toUri().toURL());
            } else if (line.startsWith("OUTPUT ")) {
                output = line.substring(7);
            } else if (line.startsWith("ARG ")) {
                argv.add(line.substring(4));
            }
        }
        lines = null;
        if (Files.exists(Paths.get("/proc/self"))) {
            // criu's action script did not take /proc away: no run here (the judge runs a started JVM)
            Runtime.getRuntime().halt(97);
        }
        if (output != null) {
            PrintStream out = new PrintStream(new FileOutputStream(output, true), true, "UTF-8");
            System.setOut(out);
            System.setErr(out);
            Files.writeString(Paths.get(new File(output).getParent(), "RESTORED"), "restored\n");
        }
        URLClassLoader loader = new URLClassLoader(dirs.toArray(new URL[0]), jars);
        if (switchAt != null) {
            String[] where = switchAt.split(" ", 2);
            Field field = Class.forName(where[0], true, loader).getDeclaredField(where[1]);
            field.setAccessible(true);
            field.setInt(null, number);
        }
        number = 0;
        Thread.currentThread().setContextClassLoader(loader);
        byte status = (Byte) run.invoke(null, argv.toArray(new String[0]), loader);
        System.exit(status & 0xff);
    }

    // every class of the class path's jars, loaded and linked but not initialised (what fails to
    // load is left: an optional dependency absent)
    private static void preload(ClassLoader jars) {
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.endsWith(".jar")) {
                continue;
            }
            try (JarFile jar = new JarFile(entry)) {
                for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements();) {
                    String name = e.nextElement().getName();
                    if (!name.endsWith(".class") || name.contains("-") || name.startsWith("META-INF")) {
                        continue;
                    }
                    try {
                        Class.forName(name.substring(0, name.length() - 6).replace('/', '.'), false, jars);
                    } catch (Throwable t) {
                        // an optional dependency absent
                    }
                }
            } catch (Exception e) {
                // an unreadable jar: its classes load on demand, as in a fresh JVM
            }
        }
    }
}
