// The builder's warm scenario runner: one JVM runs many (scenario, mutant) pairs, each in a new
// class loader over the project's class directories, so every run sees its glue, helpers and
// production classes initialised afresh (static state included) while the JDK, cucumber and the
// dependency jars stay loaded. warm_runner.py drives it; only the builder's ground truth uses it
// (a judge's verdict run is a fresh JVM), and the builder's fresh-process check compares its
// verdicts with plain JVMs.
//
// Protocol (UTF-8 lines on stdin; replies on the JVM's original stdout):
//   "DIR <path>"      a class directory of the project, in class-path order (before any RUN)
//   "ARG <argument>"  an argument of cucumber's command line for every run (--glue, --tags, ...)
//   "SWITCH <class> <field>"  where a schemata build keeps the selected number: the static int
//                     field is set in each run's loader before cucumber starts (absent: runs
//                     select nothing)
//   "RUN <number> <report path> <feature:line> <timeout ms>"
// reply: "EXIT <status>" (cucumber's exit status), "TIMEOUT" (the JVM then exits: a thread cannot
// be stopped), or "ERROR <text>". What the tests print goes to stderr-discarded sinks, never to
// the protocol stream.
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

public final class WarmRunner {
    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        PrintStream sink = new PrintStream(OutputStream.nullOutputStream(), true, "UTF-8");
        System.setOut(sink);
        System.setErr(sink);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<URL> dirs = new ArrayList<>();
        List<String> base = new ArrayList<>();
        String switchClass = null;
        Method run = Class.forName("io.cucumber.core.cli.Main").getMethod("run", String[].class, ClassLoader.class);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("DIR ")) {
                dirs.add(Paths.get(line.substring(4)).toUri().toURL());
            } else if (line.startsWith("ARG ")) {
                base.add(line.substring(4));
            } else if (line.startsWith("SWITCH ")) {
                switchClass = line.substring(7);
            } else if (line.startsWith("RUN ")) {
                String[] parts = line.substring(4).split(" ", 4);
                int number = Integer.parseInt(parts[0]);
                List<String> argv = new ArrayList<>(base);
                argv.add("--plugin");
                argv.add("json:" + parts[1]);
                argv.add(parts[2]);
                long timeout = Long.parseLong(parts[3]);
                URLClassLoader loader = new URLClassLoader(dirs.toArray(new URL[0]), WarmRunner.class.getClassLoader());
                final String chosen = switchClass;
                final Object[] result = new Object[1];
                Thread worker = new Thread(() -> {
                    try {
                        if (chosen != null) {
                            String[] where = chosen.split(" ", 2);
                            java.lang.reflect.Field field = Class.forName(where[0], true, loader)
                                .getDeclaredField(where[1]);
                            field.setAccessible(true);
                            field.setInt(null, number);
                        }
                        result[0] = run.invoke(null, argv.toArray(new String[0]), loader);
                    } catch (Throwable e) {
                        result[0] = e;
                    }
                }, "req2test-run");
                worker.setContextClassLoader(loader);
                worker.setDaemon(true);
                worker.start();
                worker.join(timeout);
                if (worker.isAlive()) {
                    protocol.println("TIMEOUT");
                    Runtime.getRuntime().halt(3);
                }
                loader.close();
                if (result[0] instanceof Byte) {
                    protocol.println("EXIT " + (((Byte) result[0]) & 0xff));
                } else {
                    protocol.println("ERROR " + String.valueOf(result[0]).replace('\n', ' '));
                }
            }
        }
    }
}
