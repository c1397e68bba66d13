package io.vivarium.itests.e2e;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.TcpPorts;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 25's other two figures, each side by side in one run. An HTTP request to a server inside a
 * procbox sandbox (Python's, keep-alive) through its exposed port against the same request sent to
 * the sandbox's address from the host: the same JDK client, alternating one by one,
 * {@value #REQUESTS} of each after {@value #WARM_UP} of each untimed (with, for scale, the daemon's
 * {@code /healthz}: what its HTTP edge costs before any route runs, and the same request through
 * nginx in the daemon's place where nginx is installed: what a reference reverse proxy's hop
 * costs on the same host). A bulk download of
 * {@value #BULK_MIB} MiB from a server in a network namespace this test makes (the "internet")
 * into an {@code egress} sandbox against the same download into a second plain namespace (both
 * cross two veth pairs and the host's forwarding; the sandbox's also its nftables chain and
 * masquerading): the same Python client, alternating, {@value #BULK_ROUNDS} of each after one of
 * each untimed; the figure is the ratio of the median throughputs.
 */
@ExtendWith(Bench.class)
class PortBenchmark {
    static final Goal PORT = Goal.atMost("HTTP request through an exposed port / sent to the sandbox directly, p50", 1.5, "×", 25);
    static final Goal BULK = Goal.atLeast("bulk download into an egress sandbox / between two plain namespaces, median", 0.5, "×", 25);
    static final int REQUESTS = 300;
    /**
     * A fresh daemon's proxy path reaches C2 only after several thousand calls (as its exec path:
     * ExecLatencyBenchmark), and a running daemon's is what is measured.
     */
    static final int WARM_UP = 15_000;
    static final int BULK_MIB = 256;
    static final int BULK_ROUNDS = 3;
    private static final int OUTSIDE_NS = 221;
    private static final int PLAIN_NS = 222;
    private static final Pattern ADDRESS = Pattern.compile("inet (10\\.213\\.[0-9.]+)/30");
    /** Serves {@code BULK_MIB} MiB of zeros from memory on 0.0.0.0:8080. */
    private static final String BULK_SERVER = """
            import sys
            from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
            CHUNK = bytes(1 << 20)
            class H(BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                def log_message(self, *a): pass
                def do_GET(self):
                    n = int(sys.argv[1])
                    self.send_response(200)
                    self.send_header("Content-Length", str(n << 20))
                    self.end_headers()
                    for _ in range(n): self.wfile.write(CHUNK)
            ThreadingHTTPServer(("0.0.0.0", 8080), H).serve_forever()
            """;
    /** Downloads a URL, discarding it; prints MiB/s. */
    private static final String BULK_CLIENT = """
            import sys, time, urllib.request
            start = time.monotonic(); n = 0
            with urllib.request.urlopen(sys.argv[1], timeout=60) as r:
                while True:
                    b = r.read(1 << 20)
                    if not b: break
                    n += len(b)
            print(n / (1 << 20) / (time.monotonic() - start))
            """;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    Path dir;

    @BeforeEach
    void needsNetworks() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(NetNamespace.available(), NetNamespace.MISSING);
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/nft")), "needs nftables' nft for sandbox networks");
    }

    @Test
    void exposedPortAndBulkEgress(BenchReport report) throws Exception {
        requestThroughAnExposedPortAgainstDirect(report);
        bulkDownloadIntoASandboxAgainstPlainNamespaces(report);
    }

    private void requestThroughAnExposedPortAgainstDirect(BenchReport report) throws Exception {
        Daemon daemon = daemons.start(dir.resolve("state"), List.of());
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        String id = SandboxPortsIT.serving(api, SandboxPortsIT.PORT);
        String sb = "/v1/sandboxes/" + id;
        Api.expect(201, api.post(sb + "/ports", Map.of("port", SandboxPortsIT.PORT)));
        JsonNode shown = Api.expect(200, api.post(sb + "/exec", Map.of("args", List.of("ip", "-4", "-o", "addr", "show", "dev", "eth0"))));
        Matcher m = ADDRESS.matcher(shown.get("stdout").asText());
        if (!m.find()) {
            throw new AssertionError("no address on the sandbox's eth0: " + shown);
        }
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest through = HttpRequest.newBuilder(URI.create(daemon.baseUrl() + sb + "/ports/" + SandboxPortsIT.PORT + "/bench"))
                .header("Authorization", "Bearer " + daemon.adminToken()).timeout(Duration.ofSeconds(30)).build();
        HttpRequest direct = HttpRequest.newBuilder(URI.create("http://" + m.group(1) + ":" + SandboxPortsIT.PORT + "/bench"))
                .timeout(Duration.ofSeconds(30)).build();
        HttpRequest edge = HttpRequest.newBuilder(URI.create(daemon.baseUrl() + "/healthz")).timeout(Duration.ofSeconds(30)).build();
        Optional<String> nginxVersion = NginxProxy.version();
        try (NginxProxy nginx = nginxVersion.isEmpty() ? null
                : NginxProxy.start(dir.resolve("nginx"), m.group(1) + ":" + SandboxPortsIT.PORT, daemon.adminToken())) {
            HttpRequest viaNginx = nginx == null ? null : HttpRequest.newBuilder(URI.create(nginx.origin() + "/bench"))
                    .header("Authorization", "Bearer " + daemon.adminToken()).timeout(Duration.ofSeconds(30)).build();
            List<Double> viaPort = new ArrayList<>();
            List<Double> toSandbox = new ArrayList<>();
            List<Double> edgeAlone = new ArrayList<>();
            List<Double> throughNginx = new ArrayList<>();
            for (int i = 0; i < WARM_UP + REQUESTS; i++) {
                double p = timed(client, through);
                double d = timed(client, direct);
                double n = viaNginx == null ? 0 : timed(client, viaNginx);
                double e = timed(client, edge);
                if (i >= WARM_UP) {
                    viaPort.add(p);
                    toSandbox.add(d);
                    throughNginx.add(n);
                    edgeAlone.add(e);
                }
            }
            Table table = Table.latencies().latency("GET through the exposed port (daemon, bearer token)", viaPort)
                    .latency("GET sent to the sandbox's address from the host", toSandbox);
            if (nginx != null) {
                table.latency("for scale: GET through " + nginxVersion.get() + " (a reference reverse proxy: kept upstream "
                        + "connections, the same forwarding headers, the token compared)", throughNginx);
            }
            report.add(table.latency("for scale: GET /healthz of the daemon (its HTTP edge alone, no token)", edgeAlone));
            report.add(nginx == null ? NginxProxy.MISSING : String.format(java.util.Locale.ROOT,
                    "nginx through the same hop / sent directly: %.2f×.", Stats.p50(throughNginx) / Stats.p50(toSandbox)));
            report.check(PORT, Stats.p50(viaPort) / Stats.p50(toSandbox));
        }
        api.delete(sb);
    }

    private static double timed(HttpClient client, HttpRequest request) throws Exception {
        long start = System.nanoTime();
        HttpResponse<byte[]> r = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
        double ms = Stats.millisSince(start);
        if (r.statusCode() != 200) {
            throw new AssertionError(request.uri() + " answered " + r.statusCode());
        }
        return ms;
    }

    private void bulkDownloadIntoASandboxAgainstPlainNamespaces(BenchReport report) throws Exception {
        try (NetNamespace outside = NetNamespace.create(OUTSIDE_NS); NetNamespace plain = NetNamespace.create(PLAIN_NS)) {
            Path server = Files.writeString(dir.resolve("bulk-server.py"), BULK_SERVER);
            List<String> serve = new ArrayList<>(outside.exec());
            serve.addAll(List.of("python3", server.toString(), Integer.toString(BULK_MIB)));
            Process serving = new ProcessBuilder(serve).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            try {
                Bounded.until(Duration.ofSeconds(20), "the bulk server in the outside namespace listens on "
                        + outside.address() + ":8080", () -> TcpPorts.listening(outside.address(), 8080));
                Daemon daemon = daemons.start(dir.resolve("state-bulk"), List.of(), List.of("-Dvivarium.network.allow=10.231.0.0/16"));
                Api api = new Api(daemon.baseUrl(), daemon.adminToken());
                String id = api.createSandbox(Map.of("network", Map.of("mode", "egress", "allow", List.of(outside.address() + "/32:8080"))));
                String url = "http://" + outside.address() + ":8080/bulk";
                Path client = Files.writeString(dir.resolve("bulk-client.py"), BULK_CLIENT);
                List<Double> intoSandbox = new ArrayList<>();
                List<Double> betweenNamespaces = new ArrayList<>();
                for (int i = 0; i <= BULK_ROUNDS; i++) {
                    double s = inSandbox(api, id, url);
                    double p = inNamespace(plain, client, url);
                    if (i > 0) {
                        intoSandbox.add(s);
                        betweenNamespaces.add(p);
                    }
                }
                report.add(new Table("download of " + BULK_MIB + " MiB", "n", "median MiB/s", "min MiB/s")
                        .row("into an egress sandbox (veth, nftables chain, masquerade)", intoSandbox.size(),
                                Stats.p50(intoSandbox), Stats.min(intoSandbox))
                        .row("into a plain namespace (veth, forwarding)", betweenNamespaces.size(),
                                Stats.p50(betweenNamespaces), Stats.min(betweenNamespaces)));
                report.check(BULK, Stats.p50(intoSandbox) / Stats.p50(betweenNamespaces));
                api.delete("/v1/sandboxes/" + id);
            } finally {
                serving.destroyForcibly();
            }
        }
    }


    private static double inSandbox(Api api, String id, String url) throws Exception {
        JsonNode r = Api.expect(200, api.post("/v1/sandboxes/" + id + "/exec",
                Map.of("args", List.of("python3", "-c", BULK_CLIENT, url), "timeout_secs", 120)));
        if (r.get("exit_code").asInt() != 0) {
            throw new AssertionError("the download in the sandbox failed: " + r);
        }
        return Double.parseDouble(r.get("stdout").asText().strip());
    }

    private static double inNamespace(NetNamespace ns, Path client, String url) throws Exception {
        List<String> cmd = new ArrayList<>(ns.exec());
        cmd.addAll(List.of("python3", client.toString(), url));
        Bounded.Ran ran = Bounded.run(Duration.ofSeconds(120), cmd.toArray(String[]::new));
        if (ran.exitCode() != 0) {
            throw new AssertionError("the download in namespace " + ns.name() + " failed: " + ran.output());
        }
        return Double.parseDouble(ran.output().strip());
    }
}
