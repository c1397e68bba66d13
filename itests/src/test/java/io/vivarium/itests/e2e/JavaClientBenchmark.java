package io.vivarium.itests.e2e;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import io.vivarium.api.ExecRequest;
import io.vivarium.client.VivariumClient;
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
 * Issue 28's second figure: an exec of {@code true} in a procbox sandbox through the Java client
 * against the same request made with the JDK's HTTP client directly (the body written by hand, the
 * answer read as a string), each over one kept-alive connection, alternating one by one (which goes
 * first alternating too) after the same warm-up.
 */
@ExtendWith(Bench.class)
class JavaClientBenchmark {
    static final Goal RATIO = Goal.atMost("exec of `true` through the Java client / raw HTTP, p50", 1.1, "×", 28);

    /** Enough for the JIT to compile the client's path (Jackson's writing and reading included), as in a program that calls it often. */
    static final int WARM_UP = 3000;
    static final int ROUNDS = 300;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    private static double timeClient(VivariumClient client, String id, ExecRequest exec) {
        long t0 = System.nanoTime();
        client.sandboxes().exec(id, exec);
        return Stats.millisSince(t0);
    }

    private static double timeRaw(HttpClient raw, HttpRequest request) throws Exception {
        long t0 = System.nanoTime();
        HttpResponse<String> r = raw.send(request, HttpResponse.BodyHandlers.ofString());
        double ms = Stats.millisSince(t0);
        if (r.statusCode() != 200) {
            throw new AssertionError("raw exec answered " + r.statusCode() + " " + r.body());
        }
        return ms;
    }

    @Test
    void clientAgainstRawHttp(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        VivariumClient client = VivariumClient.connect(URI.create(daemon.baseUrl()), daemon.adminToken());
        String id = client.sandboxes().create(null).id();
        HttpClient raw = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest request = HttpRequest.newBuilder(URI.create(daemon.baseUrl() + "/v1/sandboxes/" + id + "/exec"))
                .header("Authorization", "Bearer " + daemon.adminToken()).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"args\":[\"true\"]}")).build();
        ExecRequest exec = new ExecRequest(List.of("true"), null, null, null, null, null);
        List<Double> viaClient = new ArrayList<>();
        List<Double> viaRaw = new ArrayList<>();
        List<Double> viaRawTimed = new ArrayList<>();
        HttpRequest.Builder timed = HttpRequest.newBuilder(URI.create(daemon.baseUrl() + "/v1/sandboxes/" + id + "/exec"))
                .header("Authorization", "Bearer " + daemon.adminToken()).header("Content-Type", "application/json")
                .timeout(java.time.Duration.ofMinutes(2));
        for (int i = 0; i < WARM_UP + ROUNDS; i++) {
            double c;
            double h;
            if (i % 2 == 0) { // which goes first alternates too
                c = timeClient(client, id, exec);
                h = timeRaw(raw, request);
            } else {
                h = timeRaw(raw, request);
                c = timeClient(client, id, exec);
            }
            double t = timeRaw(raw, timed.copy().POST(HttpRequest.BodyPublishers.ofString("{\"args\":[\"true\"]}")).build());
            if (i >= WARM_UP) {
                viaClient.add(c);
                viaRaw.add(h);
                viaRawTimed.add(t);
            }
        }
        report.add(Table.latencies().latency("Java client", viaClient).latency("raw HTTP (JDK HttpClient)", viaRaw)
                .latency("raw HTTP, a new request with a 2-minute timeout each call (as the client makes)", viaRawTimed));
        report.check(RATIO, Stats.p50(viaClient) / Stats.p50(viaRaw));
    }
}
