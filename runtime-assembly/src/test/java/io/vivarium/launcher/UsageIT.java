package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The usage text has one source, the launcher: the distribution's {@code bin/vivarium help} prints
 * exactly the launcher's, and the source checkout's {@code ./vivarium help} prints its own commands
 * followed by the launcher's. Both scripts find Java through the same {@code bin/jvm.sh}.
 */
class UsageIT {

    static final String LAUNCHER_HELP = Options.USAGE + AdminClient.USAGE + SandboxCli.USAGE + StateExport.USAGE;

    @Test
    void theDistributionsScriptPrintsTheLaunchersUsage() throws Exception {
        Path dist = Path.of(System.getProperty("vivarium.dist"));
        assertEquals(LAUNCHER_HELP, run(dist.resolve("bin/vivarium").toString(), "help"));
    }

    @Test
    void theCheckoutsScriptEndsWithTheLaunchersUsage() throws Exception {
        String out = run(Path.of("..", "vivarium").toAbsolutePath().normalize().toString(), "help");
        assertTrue(out.startsWith("usage: ./vivarium <command>"), out);
        assertTrue(out.endsWith("\n" + LAUNCHER_HELP), out);
    }

    private static String run(String... cmd) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out: " + String.join(" ", cmd));
        }
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + " printed:\n" + out);
        return out;
    }
}
