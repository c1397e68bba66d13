package io.vivarium.itests.e2e;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.PostgresCluster;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 24's first figure: a procbox sandbox's create, exec of {@code true} and delete through a
 * master (on PostgreSQL, fsync on) against the same calls made directly on the node, in one run,
 * alternating, after the same warm-up ({@link #WARM_UP_EXECS}), each over one kept-alive connection of the same client.
 * The master is reached over HTTP on this host, the node over HTTPS in its network namespace; the
 * master's own hop to the node is HTTPS, so the difference is the master's hop and its records.
 */
@ExtendWith(Bench.class)
class FleetBenchmark {
    static final Goal CREATE = Goal.atMost("create through the master / directly on the node, p50", 1.3, "×", 24);
    static final Goal EXEC = Goal.atMost("exec of `true` through the master / directly on the node, p50", 1.3, "×", 24);
    static final Goal DELETE = Goal.atMost("delete through the master / directly on the node, p50", 1.3, "×", 24);

    /**
     * Untimed rounds of create, exec and delete on each path. Creates and deletes through the
     * master take a forwarding path of their own (execs are relayed, {@code SandboxService#relay}),
     * which 10 rounds left to the interpreter: 400 rounds took both paths' creates down by a third.
     */
    static final int WARM_UP = 300;
    /**
     * Execs on a kept sandbox before the rounds, through each path alike: a daemon serves many
     * calls, and the master's forwarding code, which only its path runs, is otherwise measured
     * before the JIT has compiled it (the node's code runs on both paths and warms either way): a
     * fresh daemon's request path reaches C2 only after several thousand calls (ExecLatencyBenchmark).
     */
    static final int WARM_UP_EXECS = 10_000;
    static final int ROUNDS = 100;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    @Test
    void throughTheMasterAgainstDirectlyOnTheNode(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(NetNamespace.available(), NetNamespace.MISSING);
        Assumptions.assumeTrue(PostgresCluster.binaries().isPresent(), "needs PostgreSQL's server binaries (apt-get install postgresql)");
        try (PostgresCluster cluster = PostgresCluster.start(true); NetNamespace ns = NetNamespace.create(1)) {
            Daemon master = daemons.start(dir.resolve("master"), List.of("--features",
                    "core,api-v1,procbox,fingerprint-sha256,storage-reflink,state-postgres,fleet", "--state-url", cluster.url()));
            Daemon node = daemons.startNode(dir.resolve("n1"), ns, "n1", List.of("--features", "core,api-v1,procbox,fingerprint-sha256,storage-reflink"));
            try {
                Api api = new Api(master.baseUrl(), master.adminToken());
                Api.expect(201, api.post("/v1/nodes", java.util.Map.of("address", node.address(), "pairing_code", node.pairingCode())));
                Client viaMaster = new Client(HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(),
                        master.baseUrl(), master.adminToken());
                Client direct = new Client(HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                        .sslContext(AnyCertificate.context()).build(), node.baseUrl(), node.adminToken());
                measure(report, viaMaster, direct);
            } finally {
                Api api = new Api(master.baseUrl(), master.adminToken());
                api.deleteAllSandboxes();
                master.stop();
                node.stop();
            }
        }
    }

    private static void measure(BenchReport report, Client viaMaster, Client direct) throws Exception {
        List<List<Double>> master = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        List<List<Double>> node = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        for (Client c : List.of(viaMaster, direct)) {
            String kept = Api.JSON.readTree(c.send("POST", "/v1/sandboxes", "{}", 201)).get("id").asText();
            for (int i = 0; i < WARM_UP_EXECS; i++) {
                c.send("POST", "/v1/sandboxes/" + kept + "/exec", "{\"args\": [\"true\"]}", 200);
            }
            c.send("DELETE", "/v1/sandboxes/" + kept, null, 204);
        }
        for (int round = 0; round < WARM_UP + ROUNDS; round++) {
            boolean counted = round >= WARM_UP;
            lifecycle(viaMaster, counted ? master : null);
            lifecycle(direct, counted ? node : null);
        }
        Table table = new Table("call (ms, " + ROUNDS + " alternating rounds after " + WARM_UP_EXECS + " execs and " + WARM_UP
                + " rounds on each path)", "master p50", "node p50",
                "master p99", "node p99");
        String[] names = {"create", "exec `true`", "delete"};
        for (int i = 0; i < 3; i++) {
            table.row(names[i], Stats.p50(master.get(i)), Stats.p50(node.get(i)), Stats.pct(master.get(i), 99), Stats.pct(node.get(i), 99));
        }
        report.add(table);
        report.check(CREATE, Stats.p50(master.get(0)) / Stats.p50(node.get(0)));
        report.check(EXEC, Stats.p50(master.get(1)) / Stats.p50(node.get(1)));
        report.check(DELETE, Stats.p50(master.get(2)) / Stats.p50(node.get(2)));
    }

    private static void lifecycle(Client c, List<List<Double>> into) throws Exception {
        long t0 = System.nanoTime();
        String body = c.send("POST", "/v1/sandboxes", "{}", 201);
        double create = Stats.millisSince(t0);
        String id = Api.JSON.readTree(body).get("id").asText();
        long t1 = System.nanoTime();
        c.send("POST", "/v1/sandboxes/" + id + "/exec", "{\"args\": [\"true\"]}", 200);
        double exec = Stats.millisSince(t1);
        long t2 = System.nanoTime();
        c.send("DELETE", "/v1/sandboxes/" + id, null, 204);
        double delete = Stats.millisSince(t2);
        if (into != null) {
            into.get(0).add(create);
            into.get(1).add(exec);
            into.get(2).add(delete);
        }
    }

    /** One client, one base URL, one token: the same code path for both sides. */
    private record Client(HttpClient http, String base, String token) {
        String send(String method, String path, String json, int expected) throws Exception {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer " + token)
                    .timeout(Duration.ofSeconds(60))
                    .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
            if (json != null) {
                b.header("Content-Type", "application/json");
            }
            HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != expected) {
                throw new AssertionError(method + " " + base + path + ": " + r.statusCode() + " " + r.body());
            }
            return r.body();
        }
    }
}
