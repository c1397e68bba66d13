package io.vivarium.itests.e2e;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 28's first figure: the time from a process in a procbox sandbox writing a line to a client
 * of {@code POST /v1/sandboxes/{id}/exec/stream} receiving it, measured against the line's own
 * timestamp (the line is {@code date +%s%N} as the process prints it; a process sandbox reads the
 * host's clock). Beside it, the floor: the same loop run on the host by this JVM through a pipe,
 * no sandbox, agent or HTTP; and the same loop on a terminal ({@code GET .../pty}, WebSocket). All run {@value #LINES} lines {@value #PERIOD} s apart, the first
 * {@value #WARM_UP} dropped, alternately in {@value #ROUNDS} rounds.
 */
@ExtendWith(Bench.class)
class CommandStreamBenchmark {
    static final Goal LATENCY = Goal.atMost("a line written in a procbox sandbox to a streaming client, p50", 20, "ms", 28);

    static final int ROUNDS = 3;
    static final int LINES = 80;
    static final int WARM_UP = 10;
    static final String PERIOD = "0.05";
    static final String LOOP = "for i in $(seq 1 " + LINES + "); do date +%s%N; sleep " + PERIOD + "; done";

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    @Test
    void lineToClientAgainstAHostPipe(BenchReport report) throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String id = api.createSandbox();
        List<Double> streamed = new ArrayList<>();
        List<Double> terminal = new ArrayList<>();
        List<Double> piped = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            streamed.addAll(streamed(api, id));
            terminal.addAll(terminal(daemon, id));
            piped.addAll(piped());
        }
        report.add(Table.latencies().latency("streamed through the daemon (SSE)", streamed)
                .latency("a terminal through the daemon (WebSocket, GET .../pty)", terminal)
                .latency("host pipe, no sandbox (the floor)", piped));
        report.check(LATENCY, Stats.p50(streamed));
    }

    /** Milliseconds from each line's timestamp to its arrival here, past the warm-up. */
    private static List<Double> streamed(Api api, String id) throws Exception {
        List<Double> latencies = new ArrayList<>();
        try (ServerSentEvents events = new ServerSentEvents(api.stream("POST", "/v1/sandboxes/" + id + "/exec/stream",
                Map.of("args", List.of("sh", "-c", LOOP), "timeout_secs", 120)).body())) {
            for (ServerSentEvents.Event e; (e = events.next()) != null && !"exit".equals(e.name());) {
                if ("stdout".equals(e.name())) {
                    long now = nowNanos();
                    for (String line : e.data().get("text").asText().split("\n")) {
                        latencies.add((now - Long.parseLong(line.strip())) / 1e6);
                    }
                }
            }
        }
        return latencies.subList(WARM_UP, latencies.size());
    }

    /** The same through a terminal: each binary message's lines against the time it arrived. */
    private static List<Double> terminal(Daemon daemon, String id) throws Exception {
        List<Double> latencies = new CopyOnWriteArrayList<>();
        StringBuilder partial = new StringBuilder();
        CompletableFuture<Void> closed = new CompletableFuture<>();
        WebSocket.Listener listener = new WebSocket.Listener() {
            @Override
            public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
                long now = nowNanos();
                partial.append(StandardCharsets.UTF_8.decode(data));
                int end;
                while ((end = partial.indexOf("\n")) >= 0) {
                    String line = partial.substring(0, end).strip();
                    partial.delete(0, end + 1);
                    if (!line.isEmpty()) {
                        latencies.add((now - Long.parseLong(line)) / 1e6);
                    }
                }
                ws.request(1);
                return null;
            }

            @Override
            public CompletionStage<?> onClose(WebSocket ws, int code, String reason) {
                closed.complete(null);
                return null;
            }
        };
        String query = "?args=" + URLEncoder.encode("[\"sh\", \"-c\", \"" + LOOP + "\"]", StandardCharsets.UTF_8);
        HttpClient.newHttpClient().newWebSocketBuilder().header("Authorization", "Bearer " + daemon.adminToken())
                .buildAsync(URI.create(daemon.baseUrl().replaceFirst("^http", "ws") + "/v1/sandboxes/" + id + "/pty" + query),
                        listener).get(30, TimeUnit.SECONDS);
        closed.get(120, TimeUnit.SECONDS);
        return latencies.subList(WARM_UP, latencies.size());
    }

    private static List<Double> piped() throws Exception {
        List<Double> latencies = new ArrayList<>();
        Process p = new ProcessBuilder("sh", "-c", LOOP).redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = out.readLine()) != null;) {
                latencies.add((nowNanos() - Long.parseLong(line.strip())) / 1e6);
            }
        }
        Bounded.waitFor(p, Duration.ofSeconds(60), "the piped loop ends");
        return latencies.subList(WARM_UP, latencies.size());
    }

    private static long nowNanos() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }
}
