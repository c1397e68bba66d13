package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run (issue 11 (b)): the HTTP round trip of an eval of an expression in a
 * sandbox's warm interpreter against the HTTP exec of {@code python3 -c} printing the same
 * expression in the same sandbox, on procbox and (where runsc and its root filesystem are here)
 * gVisor, one sandbox each in one daemon. Beside them, what explains the figures: the HTTP exec of
 * {@code true} (the request path with a process start but no Python), an HTTP ping (the request
 * path with agent round trips only), {@code GET /v1/sandboxes/{id}} (token and sandbox lookup, no
 * agent), {@code GET /healthz} (the HTTP floor: no token, no sandbox),
 * and {@code /usr/bin/python3 -c} spawned by this JVM on the host with no sandbox and no HTTP
 * (Python's own start-up here).
 *
 * <p>The samples are interleaved one by one: each step is one exec of {@code python3 -c}, then
 * {@value #EVALS_PER_STEP} evals, one exec of {@code true}, one ping, one get, one healthz and one
 * host spawn, so that machine noise hits every contender alike; the backends alternate by round.
 * The warm-up is {@value #WARM_UP_STEPS} untimed steps of the same kind, so that every contender
 * is warmed as it is measured (the daemon and this client start with interpreted request paths).
 */
@ExtendWith(Bench.class)
class EvalBenchmark {
    static final Goal PROCBOX_EVAL = Goal.atMost("procbox: HTTP eval p50", 5, "ms", 11);
    static final Goal PROCBOX_RATIO = Goal.atLeast("procbox: HTTP exec of `python3 -c` p50 / HTTP eval p50", 10, "×", 11);
    static final Goal GVISOR_EVAL = Goal.atMost("gvisor: HTTP eval p50", 5, "ms", 11);
    static final Goal GVISOR_RATIO = Goal.atLeast("gvisor: HTTP exec of `python3 -c` p50 / HTTP eval p50", 10, "×", 11);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 4;
    static final int STEPS_PER_ROUND = 40;
    static final int EVALS_PER_STEP = 4;
    static final int WARM_UP_STEPS = 250;
    static final String EXPRESSION = "sum(i * i for i in range(100))";

    @TempDir
    Path dir;

    /** One sandbox's samples, in milliseconds. */
    private record Samples(String backend, String id, List<Double> evals, List<Double> execs, List<Double> trues,
            List<Double> pings, List<Double> gets, List<Double> healthz, List<Double> hostSpawns,
            List<Double> roundRatios) {
        Samples(String backend, String id) {
            this(backend, id, new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
                    new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        }
    }

    @Test
    void evalRoundTripAgainstExecOfPython3C(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "no /usr/bin/python3 on this host");
        String gvisorMissing = Host.gvisorMissing();
        Daemon daemon = daemons.start(dir.resolve("state"), gvisorMissing == null
                ? List.of("--features", "core,api-v1,procbox,gvisor") : List.of());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        List<Samples> sandboxes = new ArrayList<>();
        sandboxes.add(new Samples("procbox", api.createSandbox(Map.of("backend", "procbox"))));
        if (gvisorMissing == null) {
            sandboxes.add(new Samples("gvisor", api.createSandbox(Map.of("backend", "gvisor"))));
        } else {
            report.notRun(GVISOR_EVAL, gvisorMissing);
            report.notRun(GVISOR_RATIO, gvisorMissing);
        }
        Map<String, String> expected = new LinkedHashMap<>();
        for (Samples s : sandboxes) {
            expected.put(s.id(), eval(api, s.id()));
            Samples discarded = new Samples(s.backend(), s.id());
            for (int i = 0; i < WARM_UP_STEPS; i++) {
                step(api, discarded, expected.get(s.id()));
            }
        }
        for (int round = 0; round < ROUNDS; round++) {
            for (Samples s : sandboxes) {
                int evals = s.evals().size();
                int execs = s.execs().size();
                for (int i = 0; i < STEPS_PER_ROUND; i++) {
                    step(api, s, expected.get(s.id()));
                }
                s.roundRatios().add(Stats.p50(s.execs().subList(execs, s.execs().size()))
                        / Stats.p50(s.evals().subList(evals, s.evals().size())));
            }
        }
        for (Samples s : sandboxes) {
            api.delete("/v1/sandboxes/" + s.id());
        }

        Table table = new Table("backend", "measurement", "n", "p50 ms", "p99 ms");
        for (Samples s : sandboxes) {
            row(table, s.backend(), "HTTP eval `" + EXPRESSION + "` in the warm interpreter", s.evals());
            row(table, s.backend(), "HTTP exec `python3 -c 'print(" + EXPRESSION + ")'`", s.execs());
            row(table, s.backend(), "HTTP exec `true`", s.trues());
            row(table, s.backend(), "HTTP ping", s.pings());
            row(table, s.backend(), "HTTP `GET /v1/sandboxes/{id}` (token, sandbox lookup, no agent)", s.gets());
            row(table, s.backend(), "HTTP `GET /healthz` (no token, no sandbox)", s.healthz());
        }
        List<Double> host = new ArrayList<>();
        sandboxes.forEach(s -> host.addAll(s.hostSpawns()));
        row(table, "(host)", "`/usr/bin/python3 -c` spawned by the JVM, no sandbox, no HTTP", host);
        report.add(table);
        for (Samples s : sandboxes) {
            double evalP50 = Stats.p50(s.evals());
            boolean procbox = s.backend().equals("procbox");
            report.add(s.backend() + ": exec p50 / eval p50 per round " + s.roundRatios().stream()
                    .map(r -> String.format("%.1f×", r)).toList());
            report.check(procbox ? PROCBOX_EVAL : GVISOR_EVAL, evalP50);
            report.check(procbox ? PROCBOX_RATIO : GVISOR_RATIO, Stats.p50(s.execs()) / evalP50);
        }
    }

    private static void step(Api api, Samples s, String expected) throws Exception {
        long t0 = System.nanoTime();
        JsonNode r = api.exec(s.id(), "python3", "-c", "print(" + EXPRESSION + ")");
        s.execs().add(Stats.millisSince(t0));
        check(expected, r.get("stdout").asText().strip());
        for (int i = 0; i < EVALS_PER_STEP; i++) {
            t0 = System.nanoTime();
            String result = eval(api, s.id());
            s.evals().add(Stats.millisSince(t0));
            check(expected, result);
        }
        t0 = System.nanoTime();
        api.exec(s.id(), "true");
        s.trues().add(Stats.millisSince(t0));
        t0 = System.nanoTime();
        Api.Response ping = api.post("/v1/sandboxes/" + s.id() + "/ping", "");
        s.pings().add(Stats.millisSince(t0));
        if (ping.status() != 200) {
            throw new AssertionError("ping failed: " + ping.raw().body());
        }
        t0 = System.nanoTime();
        Api.Response info = api.get("/v1/sandboxes/" + s.id());
        s.gets().add(Stats.millisSince(t0));
        if (info.status() != 200) {
            throw new AssertionError("get failed: " + info.raw().body());
        }
        t0 = System.nanoTime();
        Api.Response health = api.get("/healthz");
        s.healthz().add(Stats.millisSince(t0));
        if (health.status() != 200) {
            throw new AssertionError("healthz failed: " + health.raw().body());
        }
        ProcessBuilder spawn = new ProcessBuilder("/usr/bin/python3", "-c", "print(" + EXPRESSION + ")")
                .redirectErrorStream(true);
        // the sandboxes' environment, not this JVM's (which may carry PYTHON* variables)
        spawn.environment().clear();
        spawn.environment().put("PATH", "/usr/bin:/bin");
        t0 = System.nanoTime();
        Process p = spawn.start();
        String out = new String(p.getInputStream().readAllBytes()).strip();
        p.waitFor(10, TimeUnit.SECONDS);
        s.hostSpawns().add(Stats.millisSince(t0));
        check(expected, out);
    }

    private static String eval(Api api, String id) throws Exception {
        Api.Response r = api.post("/v1/sandboxes/" + id + "/eval", Map.of("code", EXPRESSION));
        if (r.status() != 200 || r.body().get("exit_code").asInt() != 0) {
            throw new AssertionError("eval failed: " + r.status() + " " + r.raw().body());
        }
        return r.body().get("result").asText();
    }

    private static void check(String expected, String got) {
        if (!expected.equals(got)) {
            throw new AssertionError("expected " + expected + ", got " + got);
        }
    }

    private static void row(Table table, String backend, String what, List<Double> ms) {
        table.row(backend, what, ms.size(), Stats.p50(ms), Stats.pct(ms, 99));
    }
}
