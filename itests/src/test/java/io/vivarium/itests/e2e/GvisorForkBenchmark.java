package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 11's benchmarks (a) and (c) and issue 22's gVisor dry-run, side by side in one run, the state
 * directory on a loop-mounted XFS (reflink):
 * <ul>
 * <li>(a) N children forked from a tag whose interpreter (the agent's, through eval) imported
 * {@value #MODULES} before the branch, timed from the fork request until every child has answered an
 * eval of {@value #EXPRESSION}, against N cold sandboxes created at the concurrency the fork makes
 * its children with (core makes up to {@value #FORK_PARALLEL} at once) and answering one eval that
 * imports the same modules first; the evals {@value #CONCURRENCY} at a time on both sides;
 * {@value #ROUNDS} rounds alternating which goes first, each with the other contender's sandboxes
 * deleted, after the same untimed warm-up of each (a fork and a cold start of two). numpy is in
 * the built root filesystem (build-rootfs.sh) for this: the heavy module.</li>
 * <li>(c) the pause a branch of a running gVisor sandbox reports ({@code pause_ms}), {@value #BRANCHES}
 * branches, and the stalls a ticker inside it saw.</li>
 * <li>(d) the overhead of a dry-run beyond its command on a gVisor sandbox (checkpoint, listings,
 * restore), {@value #BRANCHES} after an untimed one.</li>
 * </ul>
 * N is {@value #CHILDREN} unless the environment says {@code GVISOR_BENCH_CHILDREN=N}.
 */
@ExtendWith(Bench.class)
class GvisorForkBenchmark {
    static final Goal COLD_VS_FORK = Goal.atLeast("N cold gVisor sandboxes importing numpy / N children of a warm interpreter, "
            + "until each answered an eval (p50 of the rounds)", 5, "×", 11);
    static final Goal PAUSE = Goal.atMost("branch pause of a running gVisor sandbox, p50", 150, "ms", 11);
    static final Goal DRY_RUN = Goal.atMost("gVisor dry-run overhead beyond the command, p50", 1000, "ms", 22);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int CHILDREN = 100;
    static final int ROUNDS = 3;
    static final int BRANCHES = 5;
    /** The children core's fork makes at once (Forks.PARALLEL_CHILDREN in core): the cold creates' concurrency too. */
    static final int FORK_PARALLEL = 16;
    /** Evals made at once, in the children and in the cold sandboxes alike. */
    static final int CONCURRENCY = 4;
    static final String MODULES = "numpy, decimal, json, email.mime.multipart, email.policy, http.client";
    static final String EXPRESSION = "(str(decimal.Decimal(1) / 7), int(numpy.arange(4).sum()), json.dumps([1]))";
    private static final String ANSWER = "('0.1428571428571428571428571429', 6, '[1]')";
    /** A ticker in the branched sandbox: appends to /tmp/gaps every stall over 20 ms between its 2 ms sleeps, in ms. */
    private static final String GAPS = "import time\n"
            + "last = time.monotonic()\n"
            + "while True:\n"
            + "    time.sleep(0.002)\n"
            + "    now = time.monotonic()\n"
            + "    if now - last > 0.02:\n"
            + "        with open('/tmp/gaps', 'a') as f: f.write('%d\\n' % ((now - last) * 1000))\n"
            + "    last = now\n";
    private static final List<String> FEATURES = List.of("--features",
            "core,api-v1,gvisor,storage-reflink,fingerprint-sha256");

    @TempDir
    Path dir;

    @Test
    void forksOfAWarmPythonAgainstColdStartsTheBranchPauseAndADryRun(BenchReport report) throws Exception {
        String missing = Host.gvisorCheckpointsMissing();
        Assumptions.assumeTrue(missing == null, missing);
        String asked = System.getenv("GVISOR_BENCH_CHILDREN");
        int n = asked == null || asked.isBlank() ? CHILDREN : Integer.parseInt(asked.strip());
        Path state = daemons.xfsStateDir(dir);
        Daemon daemon = daemons.start(state, FEATURES);
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String warm = api.createSandbox(Map.of("backend", "gvisor"));
        api.eval(warm, "import " + MODULES);
        Api.Response built = api.post("/v1/sandboxes/" + warm + "/branch", Map.of("tag", "warm"));
        assertEquals(201, built.status(), String.valueOf(built.body()));
        api.deleteAllSandboxes();
        forked(api, 2);
        cold(api, 2);

        List<Double> forks = new ArrayList<>();
        List<Double> colds = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            if (round % 2 == 0) {
                forks.add(forked(api, n));
                colds.add(cold(api, n));
            } else {
                colds.add(cold(api, n));
                forks.add(forked(api, n));
            }
        }

        String parent = api.createSandbox(Map.of("backend", "gvisor"));
        Api.sh(api, parent, "cat > /tmp/gaps.py <<'EOF'\n" + GAPS + "EOF\n"
                + "python3 /tmp/gaps.py >/dev/null 2>&1 </dev/null &");
        List<Long> pauses = new ArrayList<>();
        for (int k = 0; k < BRANCHES; k++) {
            Api.Response b = api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "b" + k));
            assertEquals(201, b.status(), String.valueOf(b.body()));
            pauses.add(b.body().get("pause_ms").asLong());
        }
        List<Long> gaps = Arrays.stream(api.exec(parent, "cat", "/tmp/gaps").get("stdout").asText()
                .split("\\s+")).filter(g -> !g.isEmpty()).map(Long::valueOf).sorted(Comparator.reverseOrder())
                .limit(BRANCHES).sorted().toList();
        api.deleteAllSandboxes();

        String dry = api.createSandbox(Map.of("backend", "gvisor"));
        List<Double> dryRuns = new ArrayList<>();
        for (int k = 0; k <= BRANCHES; k++) {
            double overhead = dryRunOverhead(api, dry);
            if (k > 0) {
                dryRuns.add(overhead);
            }
        }
        api.deleteAllSandboxes();

        Table table = new Table("round", n + " sandboxes until each answered an eval (modules: " + MODULES + ")", "wall ms");
        for (int round = 0; round < ROUNDS; round++) {
            table.row(round + 1, "children forked from the warm interpreter's tag (one request)", forks.get(round));
            table.row(round + 1, "cold sandboxes, " + Math.min(n, FORK_PARALLEL) + " created at a time, importing the same "
                    + "modules", colds.get(round));
        }
        report.add(table);
        report.add(String.format("(c) branch pauses (ms): %s; seen from inside (the %d longest stalls of a 2 ms ticker in the "
                + "parent, ms): %s. (d) dry-run overhead beyond the command (ms): %s", pauses, BRANCHES, gaps,
                dryRuns.stream().map(Math::round).toList()));
        report.check(COLD_VS_FORK, Stats.p50(colds) / Stats.p50(forks));
        report.check(PAUSE, Stats.p50(pauses));
        report.check(DRY_RUN, Stats.p50(dryRuns));
    }

    /** Forks {@code n} children of the warm tag until each answered the eval; deletes them; the milliseconds. */
    private static double forked(Api api, int n) throws Exception {
        long t0 = System.nanoTime();
        askAll(api, api.fork("warm", n), EXPRESSION);
        double ms = Stats.millisSince(t0);
        api.deleteAllSandboxes();
        return ms;
    }

    /** Creates {@code n} sandboxes as the fork makes children until each imported the modules and answered; deletes them. */
    private static double cold(Api api, int n) throws Exception {
        long t0 = System.nanoTime();
        askAll(api, createAll(api, n), "import " + MODULES + "\n" + EXPRESSION);
        double ms = Stats.millisSince(t0);
        api.deleteAllSandboxes();
        return ms;
    }

    /** One dry-run that changes a file, checked to be reverted; wall time less the command's own. */
    private static double dryRunOverhead(Api api, String id) throws Exception {
        long t0 = System.nanoTime();
        Api.Response r = api.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "echo changed > /work/a",
                "paths", List.of("/work")));
        double wall = Stats.millisSince(t0);
        if (r.status() != 200 || !r.body().path("discarded").asBoolean()) {
            throw new AssertionError("dry-run failed or not reverted: " + r.status() + " " + r.raw().body());
        }
        return wall - r.body().get("duration_ms").asDouble();
    }

    private static List<String> createAll(Api api, int n) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(n, FORK_PARALLEL));
        try {
            List<Future<String>> made = new ArrayList<>();
            for (int k = 0; k < n; k++) {
                made.add(pool.submit(() -> api.createSandbox(Map.of("backend", "gvisor"))));
            }
            List<String> ids = new ArrayList<>();
            for (Future<String> f : made) {
                ids.add(Bounded.get(f, Duration.ofMinutes(5), "a create"));
            }
            return ids;
        } finally {
            pool.shutdownNow();
        }
    }

    /** Evaluates {@code code} in every sandbox, {@value #CONCURRENCY} at a time; each must answer {@value #ANSWER}. */
    private static void askAll(Api api, List<String> ids, String code) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(CONCURRENCY);
        try {
            List<Future<JsonNode>> answers = new ArrayList<>();
            for (String id : ids) {
                answers.add(pool.submit(() -> api.eval(id, code)));
            }
            for (Future<JsonNode> a : answers) {
                JsonNode r = Bounded.get(a, Duration.ofMinutes(5), "an eval");
                assertEquals(ANSWER, r.get("result").asText(), r.toString());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
