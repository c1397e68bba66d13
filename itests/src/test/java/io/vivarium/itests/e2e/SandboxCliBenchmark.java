package io.vivarium.itests.e2e;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

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
 * person waits for: the JVM's start-up, finding the daemon, the streamed exec) against
 * {@code curl} making the plain exec call, alternating, {@value #ROUNDS} rounds after
 * {@value #WARM_UP} of each.
 */
@ExtendWith(Bench.class)
class SandboxCliBenchmark {
    static final Goal RATIO = Goal.atMost("`vivarium sandbox exec ID -- true` / `curl` of the exec, whole processes, p50", 1.5,
            "×", 28);

    static final int WARM_UP = 3;
    static final int ROUNDS = 15;

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
        List<Double> viaCli = new ArrayList<>();
        List<Double> viaCurl = new ArrayList<>();
        for (int i = 0; i < WARM_UP + ROUNDS; i++) {
            double c = time(cli);
            double h = time(curl);
            if (i >= WARM_UP) {
                viaCli.add(c);
                viaCurl.add(h);
            }
        }
        report.add(Table.latencies().latency("vivarium sandbox exec (JVM)", viaCli).latency("curl", viaCurl));
        report.check(RATIO, Stats.p50(viaCli) / Stats.p50(viaCurl));
    }

    private static double time(List<String> command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        long t0 = System.nanoTime();
        Process p = pb.start();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new AssertionError(command.get(0) + " failed or hung");
        }
        return Stats.millisSince(t0);
    }
}
