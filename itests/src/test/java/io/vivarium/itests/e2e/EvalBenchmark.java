package io.vivarium.itests.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Side by side, in one run (issue 11 (b), procbox): the HTTP round trip of an eval of an expression
 * in the sandbox's warm interpreter against the HTTP exec of {@code python3 -c} printing the same
 * expression in the same sandbox. Rounds alternate between the two so that machine noise hits both
 * alike. Goals: eval p50 ≤ 5 ms and ≥ 10× faster than the exec path. Not part of {@code verify}: run
 * it with {@code ./vivarium bench EvalBenchmark}; results go to stdout and {@code target/bench/eval.md}.
 */
class EvalBenchmark {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int ROUNDS = 5;
    static final int EVALS_PER_ROUND = 100;
    static final int EXECS_PER_ROUND = 20;
    /** The daemon and this client start cold (interpreted request paths); see ExecLatencyBenchmark. */
    static final int WARM_UP = 1000;
    static final String EXPRESSION = "sum(i * i for i in range(100))";

    @TempDir
    Path dir;

    @Test
    void evalRoundTripAgainstExecOfPython3C() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "no /usr/bin/python3 on this host");
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String id = api.createSandbox();
        String expected = eval(api, id);
        for (int i = 0; i < WARM_UP; i++) {
            eval(api, id);
        }
        for (int i = 0; i < WARM_UP / 20; i++) {
            exec(api, id, expected);
        }
        List<Double> evals = new ArrayList<>();
        List<Double> execs = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < EVALS_PER_ROUND; i++) {
                long t0 = System.nanoTime();
                String result = eval(api, id);
                evals.add((System.nanoTime() - t0) / 1e6);
                check(expected, result);
            }
            for (int i = 0; i < EXECS_PER_ROUND; i++) {
                long t0 = System.nanoTime();
                exec(api, id, expected);
                execs.add((System.nanoTime() - t0) / 1e6);
            }
        }
        api.delete("/v1/sandboxes/" + id);

        double evalP50 = ExecLatencyBenchmark.pct(evals, 50);
        double execP50 = ExecLatencyBenchmark.pct(execs, 50);
        String report = String.join("\n",
                "| measurement | n | p50 ms | p99 ms |",
                "|---|---|---|---|",
                row("HTTP eval `" + EXPRESSION + "` in the warm interpreter", evals),
                row("HTTP exec `python3 -c 'print(" + EXPRESSION + ")'` in the same sandbox", execs),
                "",
                String.format("eval p50 = **%.2f ms** (goal ≤ 5 ms); exec p50 / eval p50 = **%.1f×** (goal ≥ 10×)",
                        evalP50, execP50 / evalP50),
                "");
        System.out.println(report);
        Path out = Path.of("target", "bench");
        Files.createDirectories(out);
        Files.writeString(out.resolve("eval.md"), report);
    }

    private static String eval(Api api, String id) throws Exception {
        Api.Response r = api.post("/v1/sandboxes/" + id + "/eval", Map.of("code", EXPRESSION));
        if (r.status() != 200 || r.body().get("exit_code").asInt() != 0) {
            throw new AssertionError("eval failed: " + r.status() + " " + r.raw().body());
        }
        return r.body().get("result").asText();
    }

    private static void exec(Api api, String id, String expected) throws Exception {
        JsonNode r = api.exec(id, "python3", "-c", "print(" + EXPRESSION + ")");
        check(expected, r.get("stdout").asText().strip());
    }

    private static void check(String expected, String got) {
        if (!expected.equals(got)) {
            throw new AssertionError("expected " + expected + ", got " + got);
        }
    }

    private static String row(String what, List<Double> ms) {
        return String.format("| %s | %d | %.2f | %.2f |", what, ms.size(), ExecLatencyBenchmark.pct(ms, 50),
                ExecLatencyBenchmark.pct(ms, 99));
    }
}
