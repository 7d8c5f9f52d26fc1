// A warm javac: one JVM compiles many source sets, so a compile costs javac's work, not a JVM
// start and javac's warm-up (javac_server.py drives it; req2test compiles this file on first use).
//
// Protocol (UTF-8 lines on stdin/stdout): a request is any number of "ARG <javac argument>"
// lines then "RUN"; the reply is "EXIT <status>", the compiler's output as lines prefixed "| ",
// then "DONE". Arguments are javac's own (-d, -cp, @argfile, source paths); nothing else.
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

public final class JavacServer {
    public static void main(String[] args) throws Exception {
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        List<String> request = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("ARG ")) {
                request.add(line.substring(4));
                continue;
            }
            if (!line.equals("RUN")) {
                continue;
            }
            ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
            int status;
            try {
                status = compiler.run(null, diagnostics, diagnostics, request.toArray(new String[0]));
            } catch (RuntimeException | Error e) {
                status = 99;
                diagnostics.writeBytes(String.valueOf(e).getBytes(StandardCharsets.UTF_8));
            }
            request.clear();
            out.println("EXIT " + status);
            for (String text : diagnostics.toString(StandardCharsets.UTF_8).split("\n", -1)) {
                if (!text.isEmpty()) {
                    out.println("| " + text);
                }
            }
            out.println("DONE");
        }
    }
}
