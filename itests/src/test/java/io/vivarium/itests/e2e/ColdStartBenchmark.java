package io.vivarium.itests.e2e;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.TcpPorts;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cold start of {@code ./vivarium serve} on a built tree, to the first {@code 200} from
 * {@code /healthz}, side by side in one run: the daemon as the script starts it now (with the
 * class-data sharing archive) and with {@code VIVARIUM_CDS=off}, in alternating rounds, each on a
 * fresh state directory. Every start runs with {@code -Dvivarium.startup.trace=true}, whose
 * {@code startup:} lines say where the time went: the script and JVM boot (spawn to the JVM's
 * creation), the JVM until the launcher's {@code main}, the launcher (features, tokens, port
 * check), the framework (init and installing the bundles), and bundle activation up to the first
 * healthy answer, with Jetty's bundle apart. Each side gets one untimed start first (the one with
 * the archive writes it at its exit).
 */
@ExtendWith(Bench.class)
class ColdStartBenchmark {
    static final Goal COLD_START = Goal.atMost("`./vivarium serve` to a healthy `/healthz`, p50 (default: with the CDS archive)",
            2000, "ms", 12);
    static final Goal COLD_START_NEXT = Goal.atMost(COLD_START.figure(), 1200, "ms", 22);
    static final int ROUNDS = 5;

    /** Phases in order, each from the previous mark; "spawn" is when this harness started the script. */
    static final List<String> MARKS = List.of("jvm", "main", "launcher-ready", "bundles-installed", "healthz");
    static final Map<String, String> PHASE = Map.of(
            "jvm", "script + JVM boot",
            "main", "JVM to launcher main",
            "launcher-ready", "launcher (features, token, port)",
            "bundles-installed", "framework init + bundle installs",
            "healthz", "bundle activation to healthy");

    @TempDir
    Path dir;

    @Test
    void coldStartToHealthy(BenchReport report) throws Exception {
        Path script = Path.of("..", "vivarium").toAbsolutePath().normalize();
        Daemon.distribution(); // fails with a clear message when the tree is not built
        // the first start with the archive writes it (at exit); neither warm-up start is counted
        start(script, true, dir.resolve("warm-up-cds"));
        start(script, false, dir.resolve("warm-up-nocds"));

        Map<Boolean, List<Start>> runs = new LinkedHashMap<>();
        runs.put(true, new ArrayList<>());
        runs.put(false, new ArrayList<>());
        for (int round = 0; round < ROUNDS; round++) {
            for (boolean cds : List.of(true, false)) {
                runs.get(cds).add(start(script, cds, dir.resolve((cds ? "cds-" : "nocds-") + round)));
            }
        }

        Table table = new Table("phase (p50 ms over " + ROUNDS + " starts)", "with CDS archive (default)", "VIVARIUM_CDS=off");
        for (String mark : MARKS) {
            table.row(PHASE.get(mark), p50(runs.get(true), s -> s.phase(mark)), p50(runs.get(false), s -> s.phase(mark)));
        }
        table.row("of which Jetty's bundle activation", p50(runs.get(true), Start::jettyMillis),
                p50(runs.get(false), Start::jettyMillis));
        double with = p50(runs.get(true), Start::totalMillis);
        double without = p50(runs.get(false), Start::totalMillis);
        table.row("**total: spawn to healthy**", "**" + Math.round(with) + "**", "**" + Math.round(without) + "**");
        report.add(table);
        report.add(String.format("with / without the archive = %.2f×; every total (ms): with %s, without %s", with / without,
                totals(runs.get(true)), totals(runs.get(false))));
        report.add("slowest activations of the last default start: " + runs.get(true).get(ROUNDS - 1).activations());
        report.check(COLD_START, with);
        report.check(COLD_START_NEXT, with);
    }

    /** One start: when it was spawned, its trace marks (epoch ms), the activation line, when /healthz first answered 200. */
    record Start(long spawn, Map<String, Long> marks, String activations) {
        double phase(String mark) {
            int i = MARKS.indexOf(mark);
            long from = i == 0 ? spawn : marks.get(MARKS.get(i - 1));
            return marks.get(mark) - from;
        }

        double totalMillis() {
            return marks.get("healthz") - spawn;
        }

        double jettyMillis() {
            for (String part : activations.split(" ")) {
                if (part.startsWith("org.apache.felix.http.jetty12=")) {
                    return Double.parseDouble(part.substring(part.indexOf('=') + 1));
                }
            }
            return Double.NaN;
        }
    }

    private static Start start(Path script, boolean cds, Path state) throws Exception {
        int port = TcpPorts.free();
        ProcessBuilder pb = new ProcessBuilder(script.toString(), "serve", "--state", state.toString(),
                "--port", Integer.toString(port)).redirectErrorStream(true);
        pb.environment().put("VIVARIUM_JAVA_OPTS", "-Dvivarium.startup.trace=true");
        pb.environment().put("VIVARIUM_CDS", cds ? "on" : "off");
        List<String> output = new CopyOnWriteArrayList<>();
        long spawn = System.currentTimeMillis();
        Process p = pb.start();
        try {
            Thread reader = new Thread(() -> {
                try (var in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        output.add(line);
                    }
                } catch (IOException ignored) {
                    // the process went away
                }
            }, "cold-start-output");
            reader.setDaemon(true);
            reader.start();
            long healthy = awaitHealthy(p, port, output);
            // the launcher prints its activation summary right after its own probe succeeds
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (output.stream().noneMatch(l -> l.startsWith("startup: activations")) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            Map<String, Long> marks = new LinkedHashMap<>();
            String activations = "";
            for (String line : output) {
                if (line.startsWith("startup: activations")) {
                    activations = line.substring(line.indexOf(':', "startup:".length()) + 1).strip();
                } else if (line.startsWith("startup: ")) {
                    String[] f = line.split(" ");
                    marks.put(f[1], Long.parseLong(f[2]));
                }
            }
            marks.put("healthz", healthy);
            for (String mark : MARKS) {
                if (!marks.containsKey(mark)) {
                    throw new AssertionError("no 'startup: " + mark + "' line from the daemon:\n" + String.join("\n", output));
                }
            }
            return new Start(spawn, marks, activations);
        } finally {
            p.destroy();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                Bounded.waitFor(p.destroyForcibly(), Duration.ofSeconds(30), "the daemon ends once killed");
            }
        }
    }

    /** Polls every 5 ms; the epoch ms of the first 200. */
    private static long awaitHealthy(Process p, int port, List<String> output) throws Exception {
        URI uri = URI.create("http://127.0.0.1:" + port + "/healthz");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                throw new AssertionError("the daemon exited " + p.exitValue() + ":\n" + String.join("\n", output));
            }
            try {
                HttpURLConnection c = (HttpURLConnection) uri.toURL().openConnection();
                c.setConnectTimeout(1000);
                c.setReadTimeout(2000);
                try {
                    if (c.getResponseCode() == 200) {
                        return System.currentTimeMillis();
                    }
                } finally {
                    c.disconnect();
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(5);
        }
        throw new AssertionError("no 200 from " + uri + " within 120 s:\n" + String.join("\n", output));
    }

    private static double p50(List<Start> starts, java.util.function.ToDoubleFunction<Start> f) {
        return Stats.p50(starts.stream().map(f::applyAsDouble).toList());
    }

    private static String totals(List<Start> starts) {
        return starts.stream().map(s -> String.format("%.0f", s.totalMillis())).toList().toString();
    }
}
