package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 11's benchmarks (a) and (c) on gVisor, side by side in one run, the state directory on a
 * loop-mounted XFS (reflink):
 * <ul>
 * <li>(a) N children forked from a tag whose Python process imported heavy modules ({@value #MODULES})
 * before the snapshot, timed from the fork request until every child's process has answered a
 * question (through a FIFO in its /tmp: eval on gVisor is another branch's work), against N cold
 * sandboxes created and answering the same question from a fresh {@code python3} that imports the
 * same modules. Goal: forks ≥ 5× faster.</li>
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
    /** Requests made at once, cold creates and questions alike (the fork of N is one request). */
    static final int CONCURRENCY = 4;
    static final String MODULES = "email.mime.multipart, email.policy, decimal, json, http.client";
    private static final List<String> FEATURES = List.of("--features",
            "core,api-v1,gvisor,storage-reflink,fingerprint-sha256");
    /** A Python process that has imported the modules and answers each line written to /tmp/q on /tmp/a. */
    private static final String SERVER = "import os, " + MODULES + "\n"
            + "os.mkfifo('/tmp/q'); os.mkfifo('/tmp/a')\n"
            + "open('/tmp/ready', 'w').write('ready')\n"
            + "while True:\n"
            + "    open('/tmp/q').read()\n"
            + "    with open('/tmp/a', 'w') as a: a.write(str(decimal.Decimal(1) / 7) + ' ' + json.dumps([1]))\n";
    private static final String ASK = "echo q > /tmp/q && cat /tmp/a";
    private static final String COLD = "python3 -c 'import " + MODULES + "; "
            + "print(str(decimal.Decimal(1) / 7) + \" \" + json.dumps([1]), end=\"\")'";
    private static final String ANSWER = "0.1428571428571428571428571429 [1]";

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
            Api.Response built = api.post("/v1/snapshots", Map.of("tag", "warm", "backend", "gvisor",
                    "setup", List.of("sh", "-c", "cat > /work/server.py <<'EOF'\n" + SERVER + "EOF\n"
                            + "python3 /work/server.py >/dev/null 2>&1 </dev/null & "
                            + "while [ ! -e /tmp/ready ]; do sleep 0.05; done")));
            assertEquals(201, built.status(), String.valueOf(built.body()));

            long f0 = System.nanoTime();
            Api.Response forked = api.post("/v1/sandboxes", Map.of("snapshot_tag", "warm", "n", n));
            assertEquals(201, forked.status(), String.valueOf(forked.body()));
            long forkRequestMillis = (System.nanoTime() - f0) / 1_000_000;
            List<String> children = new ArrayList<>();
            forked.body().forEach(c -> children.add(c.get("id").asText()));
            askAll(api, children, ASK);
            long warmMillis = (System.nanoTime() - f0) / 1_000_000;
            api.deleteAllSandboxes();

            long c0 = System.nanoTime();
            List<String> cold = createAll(api, n);
            askAll(api, cold, COLD);
            long coldMillis = (System.nanoTime() - c0) / 1_000_000;
            api.deleteAllSandboxes();

            String parent = api.createSandbox(Map.of("backend", "gvisor"));
            Api.sh(api, parent, "(i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done) "
                    + ">/dev/null 2>&1 </dev/null &");
            List<Long> pauses = new ArrayList<>();
            for (int k = 0; k < BRANCHES; k++) {
                Api.Response b = api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "b" + k));
                assertEquals(201, b.status(), String.valueOf(b.body()));
                pauses.add(b.body().get("pause_ms").asLong());
            }
            List<Long> sorted = pauses.stream().sorted().toList();

            String load = Files.readString(Path.of("/proc/loadavg")).strip();
            StringBuilder report = new StringBuilder();
            report.append(String.format("(a) %d children of a warm Python (%s): fork request %d ms, all answered %d ms; "
                    + "%d cold sandboxes importing the same: %d ms; cold / fork = %.1fx (goal >= 5x)%n", n, MODULES,
                    forkRequestMillis, warmMillis, n, coldMillis, (double) coldMillis / warmMillis));
            report.append(String.format("(c) branch pause of a running gVisor sandbox, %d branches: p50 %d ms, max %d ms, "
                    + "all %s (goal <= 150 ms)%n", BRANCHES, sorted.get(sorted.size() / 2), sorted.getLast(), pauses));
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
                ids.add(f.get());
            }
            return ids;
        } finally {
            pool.shutdownNow();
        }
    }

    /** Asks every sandbox {@code script}, {@value #CONCURRENCY} at a time; each must answer {@value #ANSWER}. */
    private static void askAll(Api api, List<String> ids, String script) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(CONCURRENCY);
        try {
            List<Future<JsonNode>> answers = new ArrayList<>();
            for (String id : ids) {
                answers.add(pool.submit(() -> api.exec(id, "sh", "-c", script)));
            }
            for (Future<JsonNode> a : answers) {
                JsonNode r = a.get();
                assertTrue(r.get("stdout").asText().equals(ANSWER), r.toString());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
