package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 28's third figure: {@code vivarium sandbox exec ID -- true} as a whole process (what a
 * person waits for: the script, finding the daemon, the streamed exec) against {@code curl} making the
 * plain exec call, alternating, {@value #ROUNDS} rounds after {@value #WARM_UP} of each. The command
 * line runs on its command-line server (a JVM kept warm, reached by the C front {@code bin/vivarium-cli});
 * its first command, which starts that server, and the command in a JVM of its own
 * ({@code VIVARIUM_CLI_SERVER=off}) are shown beside it.
 */
@ExtendWith(Bench.class)
class SandboxCliBenchmark {
    static final Goal RATIO = Goal.atMost("`vivarium sandbox exec ID -- true` / `curl` of the exec, whole processes, p50", 1.5,
            "×", 28);

    static final int WARM_UP = 10;
    static final int ROUNDS = 20;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    @Test
    void commandLineAgainstCurl(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(Path.of("/usr/bin/curl").toFile().canExecute(), "needs /usr/bin/curl, the contender");
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        String id = new Api(daemon.baseUrl(), daemon.adminToken()).createSandbox();
        String vivarium = Path.of(System.getProperty("vivarium.dist"), "bin", "vivarium").toString();
        List<String> cli = List.of(vivarium, "sandbox", "exec", id, "--url", daemon.baseUrl(), "--token", daemon.adminToken(),
                "--", "true");
        List<String> curl = List.of("/usr/bin/curl", "-sf", "-o", "/dev/null", "-H", "Authorization: Bearer " + daemon.adminToken(),
                "-XPOST", daemon.baseUrl() + "/v1/sandboxes/" + id + "/exec", "-d", "{\"args\":[\"true\"]}");
        Map<String, String> server = Map.of("XDG_RUNTIME_DIR", Files.createDirectories(dir.resolve("runtime")).toString());
        Map<String, String> ownJvm = Map.of("VIVARIUM_CLI_SERVER", "off");
        double first = time(cli, server);
        List<Double> viaCli = new ArrayList<>();
        List<Double> viaJvm = new ArrayList<>();
        List<Double> viaCurl = new ArrayList<>();
        for (int i = 0; i < WARM_UP + ROUNDS; i++) {
            double c = time(cli, server);
            double j = time(cli, ownJvm);
            double h = time(curl, Map.of());
            if (i >= WARM_UP) {
                viaCli.add(c);
                viaJvm.add(j);
                viaCurl.add(h);
            }
        }
        // the server stops once its socket is gone
        try (Stream<Path> files = Files.walk(dir.resolve("runtime"))) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
        report.add(Table.latencies().latency("vivarium sandbox exec (command-line server)", viaCli)
                .latency("vivarium sandbox exec, the first (starts the server)", List.of(first))
                .latency("vivarium sandbox exec, VIVARIUM_CLI_SERVER=off (a JVM of its own)", viaJvm)
                .latency("curl", viaCurl));
        report.check(RATIO, Stats.p50(viaCli) / Stats.p50(viaCurl));
    }

    private static double time(List<String> command, Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().putAll(env);
        long t0 = System.nanoTime();
        Process p = pb.start();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new AssertionError(command.get(0) + " failed or hung");
        }
        return Stats.millisSince(t0);
    }
}
