package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.PostgresCluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 23's figures, the file store and PostgreSQL side by side in one run (a throwaway cluster on
 * this host, fsync on as PostgreSQL ships): procbox create+delete in alternating rounds after the
 * same warm-up; {@code GET /v1/sandboxes} over 10,000 records (seeded as files, imported by the
 * PostgreSQL daemon at its first start; their backend is absent, so nothing runs); and PostgreSQL
 * restarted under 8 clients creating and deleting: how long until every client succeeds again,
 * and whether the records match what the clients were told.
 */
@ExtendWith(Bench.class)
class StateStoreBenchmark {
    static final Goal CREATE_DELETE = Goal.atMost("procbox create+delete p50, PostgreSQL / file store", 1.2, "×", 23);
    static final Goal LIST_FILE = Goal.below("`GET /v1/sandboxes` over 10,000 records, p50, file store", 100, "ms", 23);
    static final Goal LIST_POSTGRES = Goal.below("`GET /v1/sandboxes` over 10,000 records, p50, PostgreSQL", 100, "ms", 23);
    static final Goal RECOVERY = Goal.atMost("PostgreSQL restarted under 8 clients' create+delete: until every client "
            + "succeeds again", 5000, "ms", 23);
    static final Goal NO_LOSS = Goal.exactly("records lost or duplicated after that restart", 0, "", 23);

    static final int WARM_UP = 10;
    static final int ROUNDS = 40;
    static final int RECORDS = 10_000;
    static final int CLIENTS = 8;
    static final String FEATURES = "core,api-v1,procbox,fingerprint-sha256,storage-reflink";

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    @Test
    void fileStoreAndPostgresSideBySide(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        try (PostgresCluster cluster = PostgresCluster.start(true)) {
            List<String> pg = List.of("--features", FEATURES + ",state-postgres", "--state-url", cluster.url());
            Daemon files = daemons.start(dir.resolve("file"), List.of("--features", FEATURES));
            Daemon postgres = daemons.start(dir.resolve("pg"), pg);
            createAndDelete(report, new Api(files.baseUrl(), files.adminToken()),
                    new Api(postgres.baseUrl(), postgres.adminToken()));
            list(report, files, pg);
            restartUnderLoad(report, cluster, postgres);
        }
    }

    private static void createAndDelete(BenchReport report, Api files, Api postgres) throws Exception {
        for (int i = 0; i < WARM_UP; i++) {
            lifecycle(files);
            lifecycle(postgres);
        }
        List<Double> onFiles = new ArrayList<>();
        List<Double> onPostgres = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            onFiles.add(lifecycle(files));
            onPostgres.add(lifecycle(postgres));
        }
        Table table = new Table("procbox create+delete (ms, " + ROUNDS + " alternating rounds after " + WARM_UP + " each)",
                "file store", "PostgreSQL");
        table.row("p50", fmt(Stats.p50(onFiles)), fmt(Stats.p50(onPostgres)));
        table.row("p99", fmt(Stats.pct(onFiles, 99)), fmt(Stats.pct(onPostgres, 99)));
        report.add(table);
        report.check(CREATE_DELETE, Stats.p50(onPostgres) / Stats.p50(onFiles));
    }

    private static double lifecycle(Api api) throws Exception {
        long start = System.nanoTime();
        String id = api.createSandbox();
        Api.expect(204, api.delete("/v1/sandboxes/" + id));
        return Stats.millisSince(start);
    }

    /** 10,000 records of an absent backend as files, from a real record; the PostgreSQL daemon imports a copy. */
    private void list(BenchReport report, Daemon files, List<String> pg) throws Exception {
        Api api = new Api(files.baseUrl(), files.adminToken());
        String id = api.createSandbox();
        JsonNode template = Api.JSON.readTree(files.stateDir().resolve("sandboxes").resolve(id).resolve("sandbox.json").toFile());
        Api.expect(204, api.delete("/v1/sandboxes/" + id));
        Path seededFiles = dir.resolve("list-file");
        Path seededPostgres = dir.resolve("list-pg");
        for (Path state : List.of(seededFiles, seededPostgres)) {
            String node = "node-" + state.getFileName();
            Files.writeString(Files.createDirectories(state.resolve("store")).resolve("node"), node);
            for (int i = 0; i < RECORDS; i++) {
                String key = String.format("sb-bench%05d", i);
                ObjectNode record = template.deepCopy();
                record.put("node", node);
                ((ObjectNode) record.get("body")).put("id", key).put("backend", "bench-absent").put("createdAtUnix", 1_700_000_000L + i);
                Path file = Files.createDirectories(state.resolve("sandboxes").resolve(key)).resolve("sandbox.json");
                Files.write(file, Api.JSON.writeValueAsBytes(record));
            }
        }
        // stopped whatever happens: their sandboxes' backend never comes, so a clean-up's deletes would each wait for it
        Daemon onFiles = daemons.start(seededFiles, List.of("--features", FEATURES));
        Daemon onPostgres = null;
        try {
            onPostgres = daemons.start(seededPostgres, pg);
            measureList(report, onFiles, onPostgres);
        } finally {
            onFiles.stop();
            if (onPostgres != null) {
                onPostgres.stop();
            }
        }
    }

    private static void measureList(BenchReport report, Daemon onFiles, Daemon onPostgres) throws Exception {
        Api a = new Api(onFiles.baseUrl(), onFiles.adminToken());
        Api b = new Api(onPostgres.baseUrl(), onPostgres.adminToken());
        assertEquals(RECORDS, Api.expect(200, a.get("/v1/sandboxes")).size());
        assertEquals(RECORDS, Api.expect(200, b.get("/v1/sandboxes")).size(), "the PostgreSQL daemon imported every record");
        List<Double> fileTimes = new ArrayList<>();
        List<Double> postgresTimes = new ArrayList<>();
        for (int round = 0; round < 20; round++) {
            fileTimes.add(timedList(a));
            postgresTimes.add(timedList(b));
        }
        Table table = new Table("`GET /v1/sandboxes`, " + RECORDS + " records (ms, 20 alternating rounds)", "file store",
                "PostgreSQL");
        table.row("p50", fmt(Stats.p50(fileTimes)), fmt(Stats.p50(postgresTimes)));
        table.row("p99", fmt(Stats.pct(fileTimes, 99)), fmt(Stats.pct(postgresTimes, 99)));
        report.add(table);
        report.check(LIST_FILE, Stats.p50(fileTimes));
        report.check(LIST_POSTGRES, Stats.p50(postgresTimes));
    }

    private static double timedList(Api api) throws Exception {
        long start = System.nanoTime();
        Api.expect(200, api.get("/v1/sandboxes"));
        return Stats.millisSince(start);
    }

    /**
     * Each client creates and deletes in a loop; a create answered 503 is not retried, a delete
     * answered 503 is sent again until it is done, so every client knows which sandboxes it has.
     */
    private static void restartUnderLoad(BenchReport report, PostgresCluster cluster, Daemon daemon) throws Exception {
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicLong restartedAt = new AtomicLong(Long.MAX_VALUE);
        Map<Integer, Long> recovered = new ConcurrentHashMap<>();
        Set<String> held = ConcurrentHashMap.newKeySet();
        AtomicLong refused = new AtomicLong();
        List<Thread> clients = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
            int client = c;
            clients.add(Thread.ofPlatform().start(() -> {
                while (running.get()) {
                    try {
                        Api.Response made = api.post("/v1/sandboxes", Map.of());
                        if (made.status() != 201) {
                            refused.incrementAndGet();
                            continue;
                        }
                        String id = made.body().get("id").asText();
                        held.add(id);
                        if (System.nanoTime() > restartedAt.get()) {
                            recovered.putIfAbsent(client, System.nanoTime());
                        }
                        long giveUp = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                        int deleted;
                        while ((deleted = api.delete("/v1/sandboxes/" + id).status()) == 503 && System.nanoTime() < giveUp) {
                            refused.incrementAndGet();
                        }
                        if (deleted == 204) {
                            held.remove(id);
                        }
                    } catch (Exception e) {
                        refused.incrementAndGet();
                    }
                }
            }));
        }
        Thread.sleep(3000);
        cluster.stop();
        Thread.sleep(2000);
        cluster.startServer();
        restartedAt.set(System.nanoTime());
        Bounded.until(Duration.ofSeconds(60), "every client succeeds again", () -> recovered.size() == CLIENTS);
        double recoveryMillis = (recovered.values().stream().mapToLong(Long::longValue).max().orElseThrow() - restartedAt.get()) / 1e6;
        running.set(false);
        for (Thread t : clients) {
            Bounded.join(t, Duration.ofSeconds(120), "a client ends");
        }
        Set<String> listed = new TreeSet<>();
        for (JsonNode s : Api.expect(200, api.get("/v1/sandboxes"))) {
            listed.add(s.get("id").asText());
        }
        String node = Files.readString(daemon.stateDir().resolve("store/node")).strip();
        long rows = Long.parseLong(cluster.psql("SELECT count(*) FROM vivarium_records WHERE collection = 'sandboxes' AND node = '"
                + node + "'"));
        long wrong = Math.abs(rows - listed.size()) + Math.abs(listed.size() - held.size())
                + listed.stream().filter(id -> !held.contains(id)).count();
        Table table = new Table("PostgreSQL restarted (stopped 2 s) under " + CLIENTS + " clients", "");
        table.row("every client succeeding again after the restart", fmt(recoveryMillis) + " ms");
        table.row("requests answered 503 meanwhile", refused.get());
        table.row("sandboxes the clients hold / listed / rows", held.size() + " / " + listed.size() + " / " + rows);
        report.add(table);
        report.check(RECOVERY, recoveryMillis);
        report.check(NO_LOSS, wrong);
    }

    private static String fmt(double v) {
        return String.format("%.1f", v);
    }
}
