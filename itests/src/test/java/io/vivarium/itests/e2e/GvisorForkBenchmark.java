package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
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

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 11's benchmarks (a) and (c) on gVisor, side by side in one run, the state directory on a
 * loop-mounted XFS (reflink):
 * <ul>
 * <li>(a) N children forked from a tag whose interpreter (the agent's, through eval) imported
 * {@value #MODULES} before the branch, timed from the fork request until every child has answered an
 * eval of {@value #EXPRESSION}, against N cold sandboxes created and answering one eval that imports
 * the same modules first. Goal: forks ≥ 5× faster. numpy is in the built root filesystem
 * (build-rootfs.sh) for this: the heavy module.</li>
 * <li>(c) the pause a branch of a running gVisor sandbox reports ({@code pause_ms}), {@value #BRANCHES}
 * branches. Goal ≤ 150 ms.</li>
 * </ul>
 * N is {@value #CHILDREN} unless the environment says {@code GVISOR_BENCH_CHILDREN=N}. Not part of {@code verify}:
 * {@code ./vivarium bench GvisorForkBenchmark}; results to stdout and {@code target/bench/gvisor-fork.md}.
 */
class GvisorForkBenchmark {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int CHILDREN = 100;
    static final int BRANCHES = 5;
    /** Requests made at once, cold creates and evals alike (the fork of N is one request). */
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
    void forksOfAWarmPythonAgainstColdStartsAndTheBranchPause() throws Exception {
        String missing = Host.gvisorCheckpointsMissing();
        Assumptions.assumeTrue(missing == null, missing);
        String asked = System.getenv("GVISOR_BENCH_CHILDREN");
        int n = asked == null || asked.isBlank() ? CHILDREN : Integer.parseInt(asked.strip());
        Path state = daemons.xfsStateDir(dir);
        Daemon daemon = daemons.start(state, FEATURES);
        try {
            Api api = new Api(daemon.baseUrl(), daemon.adminToken());
            String warm = api.createSandbox(Map.of("backend", "gvisor"));
            api.eval(warm, "import " + MODULES);
            Api.Response built = api.post("/v1/sandboxes/" + warm + "/branch", Map.of("tag", "warm"));
            assertEquals(201, built.status(), String.valueOf(built.body()));
            api.deleteAllSandboxes();

            long f0 = System.nanoTime();
            List<String> children = api.fork("warm", n);
            long forkRequestMillis = (System.nanoTime() - f0) / 1_000_000;
            askAll(api, children, EXPRESSION);
            long warmMillis = (System.nanoTime() - f0) / 1_000_000;
            api.deleteAllSandboxes();

            long c0 = System.nanoTime();
            List<String> cold = createAll(api, n);
            askAll(api, cold, "import " + MODULES + "\n" + EXPRESSION);
            long coldMillis = (System.nanoTime() - c0) / 1_000_000;
            api.deleteAllSandboxes();

            String parent = api.createSandbox(Map.of("backend", "gvisor"));
            Api.sh(api, parent, "cat > /tmp/gaps.py <<'EOF'\n" + GAPS + "EOF\n"
                    + "python3 /tmp/gaps.py >/dev/null 2>&1 </dev/null &");
            List<Long> pauses = new ArrayList<>();
            for (int k = 0; k < BRANCHES; k++) {
                Api.Response b = api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "b" + k));
                assertEquals(201, b.status(), String.valueOf(b.body()));
                pauses.add(b.body().get("pause_ms").asLong());
            }
            List<Long> sorted = pauses.stream().sorted().toList();
            List<Long> gaps = Arrays.stream(api.exec(parent, "cat", "/tmp/gaps").get("stdout").asText()
                    .split("\\s+")).filter(g -> !g.isEmpty()).map(Long::valueOf).sorted(Comparator.reverseOrder())
                    .limit(BRANCHES).sorted().toList();

            String load = Files.readString(Path.of("/proc/loadavg")).strip();
            StringBuilder report = new StringBuilder();
            report.append(String.format("(a) %d children of a warm interpreter (%s): fork request %d ms, all answered %d ms; "
                    + "%d cold sandboxes importing the same: %d ms; cold / fork = %.1fx (goal >= 5x)%n", n, MODULES,
                    forkRequestMillis, warmMillis, n, coldMillis, (double) coldMillis / warmMillis));
            report.append(String.format("(c) branch pause of a running gVisor sandbox, %d branches: p50 %d ms, max %d ms, "
                    + "all %s (goal <= 150 ms); seen from inside (the %d longest stalls of a 2 ms ticker in the parent, "
                    + "ms): %s%n", BRANCHES, sorted.get(sorted.size() / 2), sorted.getLast(), pauses, BRANCHES, gaps));
            report.append("machine: ").append(Runtime.getRuntime().availableProcessors()).append(" CPUs, kernel ")
                    .append(System.getProperty("os.version")).append(", load at the end ").append(load).append('\n');
            System.out.println(report);
            Path out = Files.createDirectories(Path.of("target", "bench"));
            Files.writeString(out.resolve("gvisor-fork.md"), report);
            api.deleteAllSandboxes();
        } finally {
            daemon.cleanUp();
        }
    }

    private static List<String> createAll(Api api, int n) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(CONCURRENCY);
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
