package io.vivarium.itests.e2e;

import static io.vivarium.itests.bench.Stats.max;
import static io.vivarium.itests.bench.Stats.p50;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

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
 * End to end, as an operator would do it: 3 clients loop {@code POST /v1/sandboxes/{id}/exec true}
 * over 50 live sandboxes (each with its agent and a background process) while the procbox bundle is replaced 10 times through
 * {@code PUT /v1/plugins/io.vivarium.backend-procbox} (each time a new build: the shipped jar with
 * another Bundle-Version), with 30 execs completed before the first update and after each one. If
 * an update fails the clients stop and the run fails. Reports failed requests, the longest stall, and the time from the
 * update request to the new version being listed by {@code GET /v1/backends}.
 */
@ExtendWith(Bench.class)
class UpgradeBenchmark {
    static final Goal FAILED = Goal.exactly("failed exec requests while procbox is replaced 10 times", 0, "", 7);
    static final Goal STALL = Goal.atMost("longest stall (the slowest single exec)", 100, "ms", 7);
    static final Goal AVAILABLE = Goal.below("`PUT /v1/plugins` → new version in `/v1/backends`, p50", 500, "ms", 4);
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    static final int SANDBOXES = 50;
    static final int UPDATES = 10;
    static final int CLIENTS = 3;
    /** Execs the clients complete before the first update and after each one. */
    static final int BETWEEN_UPDATES = 30;

    @TempDir
    Path dir;

    @Test
    void execLoadWhileTheBackendIsUpdated(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < SANDBOXES; i++) {
            String id = api.createSandbox();
            api.exec(id, "sh", "-c", "sleep 600 > /dev/null 2>&1 & echo $! > /work/bg.pid");
            ids.add(id);
        }
        List<Double> latencies = Collections.synchronizedList(new ArrayList<>());
        // every exec as {start, end} in nanos, and every update as {PUT sent, new version listed}
        List<long[]> execSpans = Collections.synchronizedList(new ArrayList<>());
        List<long[]> updateSpans = new ArrayList<>();
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicInteger next = new AtomicInteger();
        List<Thread> clients = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
            Thread t = new Thread(() -> {
                while (running.get()) {
                    String id = ids.get(next.getAndIncrement() % SANDBOXES);
                    long t0 = System.nanoTime();
                    try {
                        Api.Response r = api.post("/v1/sandboxes/" + id + "/exec", "{\"args\":[\"true\"]}");
                        if (r.status() != 200 || r.body().get("exit_code").asInt() != 0) {
                            failures.add(r.status() + " " + r.raw().body());
                        }
                    } catch (Exception e) {
                        failures.add(e.toString());
                    }
                    long t1 = System.nanoTime();
                    execSpans.add(new long[] {t0, t1});
                    latencies.add((t1 - t0) / 1e6);
                }
            });
            t.start();
            clients.add(t);
        }
        Path shipped = BundleJars.shipped("backend-procbox");
        List<Double> toAvailable = new ArrayList<>();
        try {
            awaitRequests(latencies, BETWEEN_UPDATES);
            for (int u = 1; u <= UPDATES; u++) {
                String version = "0.1.0.bench" + u;
                byte[] jar = BundleJars.withVersion(shipped, version);
                long t0 = System.nanoTime();
                Api.Response r = api.sendBytes("PUT", "/v1/plugins/io.vivarium.backend-procbox", jar);
                if (r.status() != 200) {
                    throw new AssertionError("update failed: " + r.raw().body());
                }
                long deadline = t0 + 30_000_000_000L;
                while (!listed(api, version)) {
                    if (System.nanoTime() > deadline) {
                        throw new AssertionError("procbox " + version + " not listed 30 s after its update");
                    }
                    Thread.sleep(2); // the poll interval of the measurement
                }
                long listedAt = System.nanoTime();
                updateSpans.add(new long[] {t0, listedAt});
                toAvailable.add((listedAt - t0) / 1e6);
                awaitRequests(latencies, BETWEEN_UPDATES);
            }
        } finally {
            running.set(false);
            for (Thread t : clients) {
                Bounded.join(t, Duration.ofSeconds(60), "a client ends once told to");
            }
        }
        for (String id : ids) {
            String alive = Api.sh(api, id, "kill -0 $(cat /work/bg.pid) && echo alive").strip();
            if (!alive.equals("alive")) {
                failures.add("background process of " + id + " is gone");
            }
        }
        api.deleteAllSandboxes();
        List<Double> during = new ArrayList<>();
        List<Double> between = new ArrayList<>();
        synchronized (execSpans) {
            for (long[] e : execSpans) {
                boolean overlaps = updateSpans.stream().anyMatch(u -> e[0] < u[1] && e[1] > u[0]);
                (overlaps ? during : between).add((e[1] - e[0]) / 1e6);
            }
        }
        report.add(new Table("measurement", "value")
                .row("live sandboxes, exec requests during the run", SANDBOXES + ", " + latencies.size())
                .row("failed requests", failures.size() + (failures.isEmpty() ? ""
                        : " " + failures.subList(0, Math.min(3, failures.size()))))
                .row("exec latency p50 / p99", String.format("%.1f / %.1f ms", p50(latencies), Stats.pct(latencies, 99)))
                .row("… of execs overlapping an update (PUT → listed), n / p50 / max", String.format("%d / %.1f / %.1f ms",
                        during.size(), p50(during), max(during)))
                .row("… of execs between updates (the machine's own noise), n / p50 / max", String.format(
                        "%d / %.1f / %.1f ms", between.size(), p50(between), max(between)))
                .row("PUT /v1/plugins → new version in /v1/backends, p50 / max", String.format("%.1f / %.1f ms",
                        p50(toAvailable), max(toAvailable))));
        report.check(FAILED, failures.size());
        report.check(STALL, max(latencies));
        report.check(AVAILABLE, p50(toAvailable));
        if (!failures.isEmpty()) {
            throw new AssertionError("failed requests: " + failures);
        }
    }

    /** Waits (up to 60 s) until the clients have completed {@code n} more requests. */
    private static void awaitRequests(List<Double> latencies, int n) throws Exception {
        int target = latencies.size() + n;
        DeployFolder.await(n + " exec requests", java.time.Duration.ofSeconds(60), () -> latencies.size() >= target ? true : null);
    }

    private static boolean listed(Api api, String version) throws Exception {
        for (JsonNode b : api.get("/v1/backends").body()) {
            if (b.get("name").asText().equals("procbox") && b.get("version").asText().equals(version)) {
                return true;
            }
        }
        return false;
    }
}
