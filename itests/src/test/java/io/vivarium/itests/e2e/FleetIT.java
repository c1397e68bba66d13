package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import com.fasterxml.jackson.databind.JsonNode;

import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.PostgresCluster;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A master on PostgreSQL and four nodes, each a separate daemon in a network namespace this test
 * makes (addresses private to those namespaces, no route out): three added by address and pairing
 * code (listen mode), one that dials in with a registration token and long-polls (pull mode),
 * every refusal of {@code POST /v1/nodes} with its status, sandboxes spread over the nodes
 * and driven through the master with tenancy checked there, a node killed and back, a node
 * revoked and added again, the master killed and back, and killed in a fork after the node made the
 * children and before the master recorded them (adopted at its next start). The daemons are shared by the tests, which
 * run in order (a daemon a test restarts is kept for the class too).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FleetIT {
    private static final String MASTER_FEATURES = "core,api-v1,procbox,fingerprint-sha256,storage-reflink,metrics,state-postgres,fleet";
    private static final String NODE_FEATURES = "core,api-v1,procbox,fingerprint-sha256,storage-reflink";
    private static final String OTHER_TENANT_TOKEN = "fleet-it-other-tenant-token";

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path tmp;

    private static PostgresCluster database;
    private static final List<NetNamespace> namespaces = new ArrayList<>();
    private static final Map<String, Daemon> nodes = new HashMap<>();
    private static Daemon master;
    private static Api api;

    @BeforeAll
    static void fleet() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(NetNamespace.available(), NetNamespace.MISSING);
        Assumptions.assumeTrue(PostgresCluster.binaries().isPresent(),
                "needs PostgreSQL's server binaries for the master's state (apt-get install postgresql)");
        database = PostgresCluster.start();
        master = startMaster();
        for (int n = 1; n <= 3; n++) {
            NetNamespace ns = NetNamespace.create(n);
            namespaces.add(ns);
            nodes.put("n" + n, startNode("n" + n, ns));
        }
    }

    private static Daemon startMaster() throws Exception {
        return startMaster(List.of());
    }

    private static Daemon startMaster(List<String> jvmOptions) throws Exception {
        Daemon d = daemons.keepForClass(daemons.start(tmp.resolve("master"),
                List.of("--features", MASTER_FEATURES, "--state-url", database.url(), "--host", "0.0.0.0"), jvmOptions));
        api = new Api(d.baseUrl(), d.adminToken());
        return d;
    }

    private static Daemon startNode(String id, NetNamespace ns) throws Exception {
        return daemons.keepForClass(daemons.startNode(tmp.resolve(id), ns, id, List.of("--features", NODE_FEATURES)));
    }

    @AfterAll
    static void tearDown() throws Exception {
        try {
            if (master != null) {
                api.deleteAllSandboxes(); // through the master, while the nodes answer
                master.stop();
            }
            for (Daemon node : nodes.values()) {
                node.stop();
            }
        } finally {
            for (NetNamespace ns : namespaces) {
                ns.close();
            }
            if (database != null) {
                database.close();
            }
        }
    }

    private static String[] concat(String[] a, String[] b) {
        return java.util.stream.Stream.concat(java.util.Arrays.stream(a), java.util.Arrays.stream(b)).toArray(String[]::new);
    }

    private static Map<String, Object> addBody(Daemon node, String id) throws IOException {
        return Map.of("address", node.address(), "pairing_code", node.pairingCode(), "node_id", id);
    }

    private static Map<String, JsonNode> nodesById() throws Exception {
        Map<String, JsonNode> byId = new HashMap<>();
        for (JsonNode n : Api.expect(200, api.get("/v1/nodes"))) {
            byId.put(n.get("id").asText(), n);
        }
        return byId;
    }

    /**
     * Waits for the master to show node {@code id} in {@code state}; failing, says what the master
     * showed last, what it logged of the node and how the node's own output ends, for a failure seen
     * once in CI and never here to be read from its report.
     */
    private static void awaitNodeState(String id, String state, Duration within) {
        AtomicReference<String> seen = new AtomicReference<>("nothing yet");
        try {
            Bounded.until(within, "node " + id + " is " + state, () -> {
                try {
                    JsonNode node = nodesById().get(id);
                    seen.set(String.valueOf(node));
                    return node != null && state.equals(node.get("state").asText());
                } catch (Exception e) {
                    seen.set(e.toString());
                    return false;
                }
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\nthe master showed last: " + seen.get() + seenOf(id), e);
        }
    }

    /** What the master logged of node {@code id} and how the node's output ends: why a wait for it failed. */
    private static String seenOf(String id) {
        List<String> nodeOutput = nodes.get(id) == null ? List.of() : nodes.get(id).output();
        return "\nthe master logged of it:\n" + String.join("\n", master.output().stream()
                .filter(l -> l.contains("node " + id + " ")).toList())
                + "\nthe node's output ends:\n" + String.join("\n",
                        nodeOutput.subList(Math.max(0, nodeOutput.size() - 40), nodeOutput.size()));
    }

    /** Which node runs a sandbox, read from the node's own state directory. */
    private static String nodeOf(String sandbox) {
        return nodes.entrySet().stream().filter(e -> Files.isDirectory(e.getValue().stateDir().resolve("sandboxes").resolve(sandbox)))
                .map(Map.Entry::getKey).findFirst().orElse(null);
    }

    @Test
    @Order(1)
    void nodesAreAddedByAddressAndPairingCodeAndShowAsConnected() throws Exception {
        for (String id : List.of("n1", "n2", "n3")) {
            Daemon node = nodes.get(id);
            assertTrue(Files.readString(node.stateDir().resolve("pki/node/pairing-code")).strip()
                    .matches("[0-9a-f]{64}\\.[0-9a-f]{32}"), "the pairing code is <certificate SHA-256>.<secret>");
            JsonNode added = Api.expect(201, api.post("/v1/nodes", addBody(node, id)));
            assertEquals(id, added.get("id").asText());
            assertEquals("default", added.get("pool").asText(), "same host, same fingerprint: the pool asked for");
            assertEquals(node.address(), added.get("address").asText());
            assertTrue(added.get("fingerprint").asText().matches("[0-9a-f]{8}"), added.toString());
            assertTrue(added.get("max_sandboxes").asInt() > 0);
            assertFalse(added.toString().contains(node.pairingCode().split("\\.")[1]), "the secret is never shown");
        }
        for (String id : List.of("n1", "n2", "n3")) {
            String secret = nodes.get(id).pairingCode().split("\\.")[1];
            assertEquals("0", database.psql("SELECT count(*) FROM vivarium_records WHERE body::text LIKE '%" + secret + "%'"),
                    "the master's records hold node " + id + "'s pairing secret sealed, not as it is");
        }
        Map<String, JsonNode> listed = nodesById();
        assertEquals(Set.of("n1", "n2", "n3"), listed.keySet());
        for (JsonNode n : listed.values()) {
            assertEquals("connected", n.get("state").asText(), n.toString());
            assertTrue(n.has("sandboxes") && n.has("mem_available_mib"), n.toString());
            assertFalse(n.get("host").get("kernel").asText().isEmpty(), n.toString());
        }
        JsonNode backends = Api.expect(200, api.get("/v1/backends"));
        assertEquals(1, backends.size(), "the fleet's backends, each once: " + backends);
        assertEquals("procbox", backends.get(0).get("name").asText());
        assertEquals("n1,n2,n3", backends.get(0).get("details").get("nodes").asText());
        Bounded.until(Duration.ofSeconds(5), "the master's gauges count its nodes", () -> {
            try {
                String metrics = api.get("/metrics").raw().body();
                return metrics.contains("vivarium_nodes{state=\"connected\"} 3")
                        && metrics.contains("vivarium_node_max_sandboxes{node=\"n1\",pool=\"default\"}");
            } catch (Exception e) {
                return false;
            }
        });
    }

    @Test
    @Order(2)
    void badAddressesAndCodesAre400UnreachableOrWrongNodesAre502AndAConnectedIdIs409() throws Exception {
        Daemon n1 = nodes.get("n1");
        Daemon n2 = nodes.get("n2");
        String code1 = n1.pairingCode();
        Api api = FleetIT.api.outsideTheContract(); // the requests below are wrong on purpose
        assertError(400, api.post("/v1/nodes", Map.of("address", "not an address", "pairing_code", code1)), "nothing was dialled");
        assertError(400, api.post("/v1/nodes", Map.of("address", n1.address(), "pairing_code", "abc")), "nothing was dialled");
        assertError(400, api.post("/v1/nodes", Map.of("pairing_code", code1)), "address is required");

        api = FleetIT.api; // the requests below are well formed
        String unreachable = namespaces.get(0).address() + ":" + (Daemon.NODE_PORT + 1);
        assertError(502, api.post("/v1/nodes", Map.of("address", unreachable, "pairing_code", code1, "node_id", "x1")),
                "cannot be reached");
        // n2's certificate under n1's code: the pin refuses it before the secret is sent
        assertError(502, api.post("/v1/nodes", Map.of("address", n2.address(), "pairing_code", code1, "node_id", "x2")),
                "is not the node of this pairing code");
        String wrongSecret = code1.split("\\.")[0] + ".0123456789abcdef0123456789abcdef";
        assertError(502, api.post("/v1/nodes", Map.of("address", n1.address(), "pairing_code", wrongSecret, "node_id", "x3")),
                "refused the pairing secret");
        assertError(409, api.post("/v1/nodes", addBody(n1, "n1")), "is connected now");
        assertEquals(Set.of("n1", "n2", "n3"), nodesById().keySet(), "no refused node was recorded");
    }

    @Test
    @Order(3)
    void sandboxesSpreadOverTheNodesAndEveryRouteWorksThroughTheMasterForItsTenantOnly() throws Exception {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ids.add(api.createSandbox());
        }
        Set<String> used = new HashSet<>();
        for (String id : ids) {
            used.add(nodeOf(id));
        }
        assertEquals(Set.of("n1", "n2", "n3"), used, "each create went to the least loaded node");

        String sb = ids.get(0);
        assertEquals("hello\n", Api.sh(api, sb, "echo hello > /work/f.txt && cat /work/f.txt"));
        Api.expect(204, api.sendBytes("PUT", "/v1/sandboxes/" + sb + "/files?path=/work/up.txt", "uploaded".getBytes()));
        assertEquals("uploaded", new String(api.raw("GET", "/v1/sandboxes/" + sb + "/files?path=/work/up.txt", null).body()));
        Api.expect(200, api.post("/v1/sandboxes/" + sb + "/baseline", Map.of("paths", List.of("/work"))));
        Api.sh(api, sb, "echo more > /work/new.txt");
        JsonNode changes = Api.expect(200, api.post("/v1/sandboxes/" + sb + "/changes", ""));
        assertTrue(changes.toString().contains("/work/new.txt"), changes.toString());
        JsonNode dry = Api.expect(200, api.post("/v1/sandboxes/" + sb + "/dry-run",
                Map.of("command", "rm /work/f.txt", "paths", List.of("/work"), "timeout_secs", 10)));
        assertTrue(dry.toString().contains("/work/f.txt"), dry.toString());
        assertEquals("hello\n", Api.sh(api, sb, "cat /work/f.txt"), "the dry-run put the sandbox back");
        Api.expect(200, api.post("/v1/sandboxes/" + sb + "/ping", null));
        assertEquals("running", Api.expect(200, api.get("/v1/sandboxes/" + sb)).get("status").asText());
        Set<String> listed = new HashSet<>();
        Api.expect(200, api.get("/v1/sandboxes")).forEach(s -> listed.add(s.get("id").asText()));
        assertTrue(listed.containsAll(ids), listed.toString());

        Files.writeString(master.stateDir().resolve("tokens"), "\n" + OTHER_TENANT_TOKEN + " other admin\n",
                java.nio.file.StandardOpenOption.APPEND);
        Api other = api.as(OTHER_TENANT_TOKEN);
        assertEquals(404, other.get("/v1/sandboxes/" + sb).status(), "another tenant's sandbox is 404 at the master");
        assertEquals(404, other.post("/v1/sandboxes/" + sb + "/exec", Map.of("args", List.of("true"))).status());
        assertEquals(404, other.delete("/v1/sandboxes/" + sb).status());
        assertFalse(other.get("/v1/sandboxes").raw().body().contains(sb));
        assertEquals(404, other.get("/v1/sandboxes/" + sb + "/commands").status());

        String commands = "/v1/sandboxes/" + sb + "/commands";
        String command = Api.expect(201, api.post(commands + "?stdin=open",
                Map.of("args", List.of("sh", "-c", "echo ready; read l; echo got $l")))).get("id").asText();
        try (ServerSentEvents events = new ServerSentEvents(api.stream("GET", commands + "/" + command + "/events", null).body())) {
            ServerSentEvents.Event first = events.nextEvent();
            assertEquals("ready\n", first.data().get("text").asText(), "a node's command streams through the master");
            Api.expect(200, api.sendBytes("POST", commands + "/" + command + "/stdin?eof=true", "x\n".getBytes()));
            StringBuilder rest = new StringBuilder();
            for (ServerSentEvents.Event e; (e = events.next()) != null && !"exit".equals(e.name());) {
                if ("stdout".equals(e.name())) {
                    rest.append(e.data().get("text").asText());
                }
            }
            assertEquals("got x\n", rest.toString());
        }
        assertEquals("exited", Api.expect(200, api.post(commands + "/" + command + "/wait", null)).get("status").asText());
        try (ServerSentEvents again = new ServerSentEvents(
                api.stream("GET", commands + "/" + command + "/events", null, "Last-Event-ID", "6").body())) {
            assertEquals("got x\n", again.nextEvent().data().get("text").asText(), "resumed at an offset through the master");
        }
        assertEquals(1, Api.expect(200, api.get(commands)).size());
        try (Terminal t = new Terminal(master.baseUrl(), master.adminToken(), "/v1/sandboxes/" + sb + "/pty?rows=21&cols=43")) {
            assertEquals("started", t.message().get("type").asText(), "a terminal on a node's sandbox, through the master");
            t.control("{\"type\": \"resize\", \"rows\": 22, \"cols\": 44}");
            t.type("stty size; exit 3\n");
            t.screenWhen(s -> s.contains("22 44"), "the size set through the master");
            assertEquals(3, t.message().get("command").get("exit_code").asInt());
        }

        String onN2 = Api.expect(201, api.post("/v1/sandboxes", Map.of("node_id", "n2"))).get("id").asText();
        assertEquals("n2", nodeOf(onN2), "node_id names the node outright");
        Api.expect(204, api.delete("/v1/sandboxes/" + onN2));
        assertError(404, api.post("/v1/sandboxes", Map.of("node_id", "nosuch")), "no node nosuch");

        Api.expect(204, api.delete("/v1/sandboxes/" + ids.get(2)));
        assertEquals(404, api.get("/v1/sandboxes/" + ids.get(2)).status());
        assertEquals(null, nodeOf(ids.get(2)), "deleted on its node");
    }

    @Test
    @Order(31)
    void aPortOfANodesSandboxIsReachedThroughTheMasterByBearerTokenWebSocketAndTheMastersSignedUrl() throws Exception {
        String id = SandboxPortsIT.serving(api, SandboxPortsIT.PORT);
        assertTrue(nodeOf(id) != null, "placed on a node");
        String sb = "/v1/sandboxes/" + id;
        String base = sb + "/ports/" + SandboxPortsIT.PORT + "/";
        JsonNode port = Api.expect(201, api.post(sb + "/ports", Map.of("port", SandboxPortsIT.PORT, "expires_in_secs", 600)));
        assertEquals(base, port.get("url").asText());
        assertEquals(List.of(String.valueOf(SandboxPortsIT.PORT)), Api.expect(200, api.get(sb + "/ports")).findValuesAsText("port"));

        JsonNode got = SandboxPortsIT.echo(api.raw("GET", base + "some/page?x=1&y=%20z", null));
        assertEquals("/some/page?x=1&y=%20z", got.get("path").asText(), "the path and query, through the master and its node");
        JsonNode headers = got.get("headers");
        assertFalse(headers.has("authorization"), "neither the caller's token nor the node's secret reaches the server: " + headers);
        assertFalse(headers.has("vivarium-tenant"), headers.toString());
        assertEquals(base, headers.get("x-forwarded-prefix").asText());
        assertEquals(java.net.URI.create(master.baseUrl()).getAuthority(), headers.get("x-forwarded-host").asText(),
                "the server sees the host the caller asked, the master's, not the node's");
        byte[] big = "0123456789abcdef".repeat(1 << 16).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        JsonNode posted = SandboxPortsIT.echo(api.raw("POST", base + "upload", big));
        assertEquals(big.length, posted.get("body").asText().length(), "a 1 MiB body streamed through both daemons");
        try (var socket = new SandboxPortsIT.Echo(master.baseUrl().replaceFirst("^http", "ws") + base + "ws", master.adminToken())) {
            assertEquals("echo hello", socket.exchange("hello"), "a WebSocket through the master and its node");
        }

        String signed = port.get("signed_url").asText();
        java.net.http.HttpClient browser = java.net.http.HttpClient.newBuilder().cookieHandler(new java.net.CookieManager())
                .followRedirects(java.net.http.HttpClient.Redirect.NORMAL).build();
        java.net.http.HttpResponse<byte[]> opened = Api.judged(browser.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create(master.baseUrl() + signed)).build(), java.net.http.HttpResponse.BodyHandlers.ofByteArray()), null);
        assertEquals(200, opened.statusCode(), "the master's signed URL, checked at the master: "
                + new String(opened.body(), java.nio.charset.StandardCharsets.UTF_8));

        if (!Files.readString(master.stateDir().resolve("tokens")).contains(OTHER_TENANT_TOKEN)) {
            Files.writeString(master.stateDir().resolve("tokens"), "\n" + OTHER_TENANT_TOKEN + " other admin\n",
                    java.nio.file.StandardOpenOption.APPEND);
        }
        Api other = api.as(OTHER_TENANT_TOKEN);
        assertEquals(404, other.get(sb + "/ports").status(), "another tenant's sandbox is 404 at the master");
        assertEquals(404, other.raw("GET", base, null).statusCode());
        assertEquals(404, other.post(sb + "/ports", Map.of("port", 9000)).status());

        Api.expect(204, api.delete(sb + "/ports/" + SandboxPortsIT.PORT));
        assertEquals(401, Api.judged(browser.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(master.baseUrl() + signed))
                .build(), java.net.http.HttpResponse.BodyHandlers.ofByteArray()), null).statusCode(),
                "a closed port's signed URL is refused at the master");
        Api.Response closed = api.get(base);
        assertEquals(404, closed.status());
        assertTrue(closed.error().contains("not exposed"), "the node's own answer: " + closed.error());
        Api.expect(204, api.delete(sb));
    }

    @Test
    @Order(4)
    void aNodeThatLacksATagsImageFetchesItOnceFromItsHolderAndADeleteDropsEveryCopy() throws Exception {
        String parent = api.createSandbox();
        String on = nodeOf(parent);
        Api.sh(api, parent, "echo from-parent > /work/p.txt && mkdir -p /work/d && chmod 750 /work/d && ln -s ../p.txt /work/d/link");
        JsonNode branched = Api.expect(201, api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "fleet-t1")));
        assertEquals("fleet-t1", branched.get("tag").asText());
        Api.expect(200, api.get("/v1/snapshots/fleet-t1/info"));

        String elsewhere = on.equals("n1") ? "n2" : "n1";
        List<String> children = forkOn("fleet-t1", 2, elsewhere);
        for (String child : children) {
            assertEquals(elsewhere, nodeOf(child), "node_id names the node; it fetched the image first");
            assertEquals("from-parent\n", Api.sh(api, child, "cat /work/d/link && stat -c %a /work/d | grep -qx 750"));
        }
        Path copy = imageOn(elsewhere, "fleet-t1");
        Object fetched = Files.getAttribute(copy, "unix:ino");
        children.addAll(forkOn("fleet-t1", 1, elsewhere));
        assertEquals(fetched, Files.getAttribute(imageOn(elsewhere, "fleet-t1"), "unix:ino"), "a second fork there fetches nothing");
        children.addAll(api.fork("fleet-t1", 1));
        String metrics = api.get("/metrics").raw().body();
        assertTrue(metrics.contains("vivarium_image_fetches_total{outcome=\"ok\"}"), "the master counts the fetch");
        assertTrue(metrics.contains("vivarium_image_fetch_seconds_count"), "and times it");
        assertEquals(1, api.get("/v1/snapshots").raw().body().split("\"fleet-t1\"", -1).length - 1,
                "the master lists the tag once, not its copies");
        Api other = api.as(OTHER_TENANT_TOKEN);
        assertEquals(404, other.get("/v1/snapshots/fleet-t1/info").status(), "another tenant's tag is not there");
        assertEquals(404, other.post("/v1/sandboxes", Map.of("snapshot_tag", "fleet-t1", "node_id", elsewhere)).status());

        for (String child : children) {
            Api.expect(204, api.delete("/v1/sandboxes/" + child));
        }
        Api.expect(204, api.delete("/v1/snapshots/fleet-t1"));
        assertFalse(api.get("/v1/snapshots").raw().body().contains("\"fleet-t1\""));
        for (String id : List.of("n1", "n2", "n3")) {
            assertEquals(null, imageOn(id, "fleet-t1"), "node " + id + " dropped its copy with the tag");
        }
        Api.expect(204, api.delete("/v1/sandboxes/" + parent));
    }

    /** A fork of {@code n} children of {@code tag} on the node {@code node}, through the master. */
    private static List<String> forkOn(String tag, int n, String node) throws Exception {
        List<String> ids = new ArrayList<>();
        Api.expect(201, api.post("/v1/sandboxes", Map.of("snapshot_tag", tag, "n", n, "node_id", node)))
                .forEach(c -> ids.add(c.get("id").asText()));
        return ids;
    }

    /** The image directory of a tag on a node, read from its state directory; null if it has none. */
    private static Path imageOn(String node, String tag) throws IOException {
        Path snapshots = nodes.get(node).stateDir().resolve("snapshots");
        if (!Files.isDirectory(snapshots)) {
            return null;
        }
        try (var walk = Files.walk(snapshots, 2)) {
            return walk.filter(p -> p.getFileName().toString().equals(tag)).map(p -> p.resolve("image")).filter(Files::isDirectory)
                    .findFirst().orElse(null);
        }
    }

    @Test
    @Order(42)
    void aForkOfSeveralChildrenIsSpreadChildByChildOverTheNodesWithTheHoldersHost() throws Exception {
        String parent = Api.expect(201, api.post("/v1/sandboxes", Map.of("node_id", "n1"))).get("id").asText();
        Api.sh(api, parent, "echo spread > /work/s.txt");
        Api.expect(201, api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "fleet-spread")));
        Map<String, Integer> before = new HashMap<>();
        for (String id : List.of("n1", "n2", "n3")) {
            before.put(id, nodesById().get(id).path("sandboxes").asInt());
        }
        List<String> children = api.fork("fleet-spread", 6);
        assertEquals(6, children.size());
        Map<String, Integer> perNode = new HashMap<>();
        for (String child : children) {
            perNode.merge(nodeOf(child), 1, Integer::sum);
            assertEquals("spread\n", Api.sh(api, child, "cat /work/s.txt"));
        }
        assertTrue(perNode.size() >= 2, "each child went to the least loaded node then, not all six to one: " + perNode
                + " (sandboxes before: " + before + ")");
        for (String node : perNode.keySet()) {
            assertTrue(node.equals("n1") || imageOn(node, "fleet-spread") != null, node + " fetched the image for its children");
        }
        for (String child : children) {
            Api.expect(204, api.delete("/v1/sandboxes/" + child));
        }
        Api.expect(204, api.delete("/v1/snapshots/fleet-spread"));
        for (String id : List.of("n1", "n2", "n3")) {
            assertEquals(null, imageOn(id, "fleet-spread"), "node " + id + " dropped its copy with the tag");
        }
        Api.expect(204, api.delete("/v1/sandboxes/" + parent));
    }

    @Test
    @Order(41)
    void aNodeKilledInTheMiddleOfAFetchKeepsNoHalfImageAndFetchesItAgainWhenBack() throws Exception {
        String parent = api.createSandbox();
        String on = nodeOf(parent);
        String digest = Api.sh(api, parent, "head -c 48M /dev/urandom > /work/big && sha256sum < /work/big");
        Api.expect(201, api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "fleet-big")));
        String target = on.equals("n3") ? "n2" : "n3";
        NetNamespace ns = namespaces.get(Integer.parseInt(target.substring(1)) - 1);
        nodes.get(target).stop();
        // the node halts (as kill -9 would) once 8 MiB of the image are written
        nodes.put(target, daemons.keepForClass(daemons.startNode(tmp.resolve(target), ns, target, List.of("--features", NODE_FEATURES),
                List.of("-Dvivarium.test.halt.at=snapshot.copy.bytes#8"))));
        awaitNodeState(target, "connected", Duration.ofSeconds(60));
        // a node just connected may still be bringing its backend up (a 503 of its own): the fork is
        // asked again until one reaches the fetch, whose 8th MiB halts the node
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        Api.Response cut;
        do {
            cut = api.post("/v1/sandboxes", Map.of("snapshot_tag", "fleet-big", "node_id", target));
            assertEquals(503, cut.status(), cut.raw().body());
        } while (!nodes.get(target).awaitExit(Duration.ofSeconds(3)) && System.nanoTime() < deadline);
        String lastAnswer = cut.raw().body();
        assertTrue(nodes.get(target).awaitExit(Duration.ofSeconds(30)), () -> "the node halted at the test point; the fork's last"
                + " answer: " + lastAnswer + seenOf(target));

        nodes.put(target, startNode(target, ns));
        awaitNodeState(target, "connected", Duration.ofSeconds(30));
        assertEquals(null, imageOn(target, "fleet-big"), "the half-fetched copy was removed when the node started");
        String child = forkOn("fleet-big", 1, target).get(0);
        assertEquals(target, nodeOf(child));
        assertEquals(digest, Api.sh(api, child, "sha256sum < /work/big"), "the copy fetched again is whole");
        Api.expect(204, api.delete("/v1/sandboxes/" + child));
        Api.expect(204, api.delete("/v1/snapshots/fleet-big"));
        assertEquals(null, imageOn(target, "fleet-big"));
        Api.expect(204, api.delete("/v1/sandboxes/" + parent));
    }

    @Test
    @Order(5)
    void aNodeThatStopsAnsweringIsDisconnectedItsSandboxesSaySoAndAreReconciledWhenItIsBack() throws Exception {
        String sb = api.createSandbox();
        String on = nodeOf(sb);
        Api.sh(api, sb, "echo kept > /work/kept.txt");
        nodes.get(on).kill9();

        awaitNodeState(on, "disconnected", Duration.ofSeconds(10));
        Bounded.until(Duration.ofSeconds(5), "the gauge counts the disconnected node", () -> {
            try {
                return api.get("/metrics").raw().body().contains("vivarium_nodes{state=\"disconnected\"} 1");
            } catch (Exception e) {
                return false;
            }
        });
        JsonNode shown = Api.expect(200, api.get("/v1/sandboxes/" + sb));
        assertEquals("node_disconnected", shown.get("status").asText(), shown.toString());
        Api.Response exec = api.post("/v1/sandboxes/" + sb + "/exec", Map.of("args", List.of("true")));
        assertEquals(503, exec.status(), exec.raw().body());
        assertTrue(exec.raw().headers().firstValue("Retry-After").isPresent());
        assertTrue(api.get("/v1/sandboxes").raw().body().contains("node_disconnected"));

        nodes.put(on, startNode(on, namespaces.get(Integer.parseInt(on.substring(1)) - 1)));
        awaitNodeState(on, "connected", Duration.ofSeconds(30));
        assertEquals("kept\n", Api.sh(api, sb, "cat /work/kept.txt"), "the sandbox outlived its node's daemon");
        long seen = 0;
        for (JsonNode s : Api.expect(200, api.get("/v1/sandboxes"))) {
            seen += s.get("id").asText().equals(sb) ? 1 : 0;
        }
        assertEquals(1, seen, "neither lost nor duplicated");
    }

    @Test
    @Order(51)
    void aCallUnderWayToANodeThatStopsAnsweringIsCutWhenTheNodeIsDisconnected() throws Exception {
        String sb = api.createSandbox();
        String on = nodeOf(sb);
        java.util.concurrent.CompletableFuture<Api.Response> exec = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return api.post("/v1/sandboxes/" + sb + "/exec", Map.of("args", List.of("sleep", "300"), "timeout_secs", 600));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Bounded.until(Duration.ofSeconds(30), "the exec runs", () -> {
            try {
                return Api.sh(api, sb, "pgrep -x sleep || true").strip().matches("\\d+");
            } catch (Exception e) {
                return false;
            }
        });
        long pid = nodes.get(on).pid();
        Bounded.run(Duration.ofSeconds(10), "kill", "-STOP", String.valueOf(pid)); // the node hangs, its sandboxes run on
        try {
            awaitNodeState(on, "disconnected", Duration.ofSeconds(15));
            Api.Response cut = exec.get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(503, cut.status(), cut.raw().body());
            assertTrue(cut.raw().headers().firstValue("Retry-After").isPresent());
            assertTrue(cut.error().contains("was disconnected while the call was under way"), cut.error());
        } finally {
            Bounded.run(Duration.ofSeconds(10), "kill", "-CONT", String.valueOf(pid));
        }
        awaitNodeState(on, "connected", Duration.ofSeconds(30));
        Api.expect(204, api.delete("/v1/sandboxes/" + sb));
    }

    @Test
    @Order(6)
    void aRevokedNodeIsNoLongerContactedUntilItIsAddedAgainWithItsPairingCode() throws Exception {
        String sb = api.createSandbox();
        String on = nodeOf(sb);
        String holder = on.equals("n1") ? "n2" : "n1";
        String parent = Api.expect(201, api.post("/v1/sandboxes", Map.of("node_id", holder))).get("id").asText();
        Api.expect(201, api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", "fleet-revoked-copy")));
        Api.expect(204, api.delete("/v1/sandboxes/" + forkOn("fleet-revoked-copy", 1, on).get(0)));
        assertTrue(imageOn(on, "fleet-revoked-copy") != null, "node " + on + " holds a copy");
        // the command line's node commands (docs/clients.md), on the master as an operator
        String[] atTheMaster = {"--url", master.baseUrl(), "--token", master.adminToken()};
        CommandLine.Run revokedByCli = CommandLine.run(tmp, Map.of(), concat(new String[] {"node", "revoke", on, "--json"}, atTheMaster));
        assertEquals(0, revokedByCli.code(), revokedByCli.err());
        assertEquals("revoked", Api.JSON.readTree(revokedByCli.out()).get("state").asText());
        assertEquals("revoked", nodesById().get(on).get("state").asText());
        assertEquals(503, api.post("/v1/sandboxes/" + sb + "/exec", Map.of("args", List.of("true"))).status());
        for (int i = 0; i < 2; i++) {
            String placed = api.createSandbox();
            assertNotEquals(on, nodeOf(placed), "nothing is placed on a revoked node");
            Api.expect(204, api.delete("/v1/sandboxes/" + placed));
        }
        assertError(404, api.post("/v1/node/revoke/nosuch", null), "no node nosuch");
        Api.expect(204, api.delete("/v1/snapshots/fleet-revoked-copy")); // a copy on a revoked node does not hold a delete
        Api.expect(204, api.delete("/v1/sandboxes/" + parent));

        CommandLine.Run added = CommandLine.run(tmp, Map.of(), concat(new String[] {"node", "add", nodes.get(on).address(),
                "--pairing-code", nodes.get(on).pairingCode(), "--id", on}, atTheMaster));
        assertEquals(0, added.code(), added.err());
        CommandLine.Run listed = CommandLine.run(tmp, Map.of(), concat(new String[] {"node", "ls"}, atTheMaster));
        assertTrue(listed.out().lines().anyMatch(l -> l.startsWith(on + " ") && l.contains(" connected ")), listed.out());
        assertEquals("", Api.sh(api, sb, "true"), "its sandboxes answer again");
        Bounded.until(Duration.ofSeconds(30), "node " + on + " drops its copy of the tag deleted while it was revoked", () -> {
            try {
                return imageOn(on, "fleet-revoked-copy") == null;
            } catch (IOException e) {
                return false;
            }
        });
    }

    @Test
    @Order(7)
    void aNodeThatDialsInRegistersWithATokenAndIsDrivenThroughItsPollLikeTheOthers() throws Exception {
        JsonNode issued = Api.expect(201, api.post("/v1/node/tokens", Map.of("pool", "default", "ttl_secs", 600)));
        String token = issued.get("token").asText();
        NetNamespace ns = NetNamespace.create(4);
        namespaces.add(ns);
        String masterUrl = "http://" + ns.hostAddress() + ":" + master.baseUrl().replaceAll(".*:", "");
        nodes.put("n4", daemons.keepForClass(daemons.startNode(tmp.resolve("n4"), ns, "n4", List.of("--features", NODE_FEATURES,
                "--master-url", masterUrl, "--master-plain-http", "--registration-token", token))));
        awaitNodeState("n4", "connected", Duration.ofSeconds(30));
        JsonNode n4 = nodesById().get("n4");
        assertEquals("pull", n4.get("mode").asText(), n4.toString());
        assertFalse(n4.has("address"), "a node that dials in has no address");
        assertEquals("default", n4.get("pool").asText());

        assertEquals(401, api.as(token).post("/v1/node/poll?hold_secs=0", Map.of("hello", nodeHello())).status(),
                "a registration token is used once");
        assertError(403, api.post("/v1/node/poll?hold_secs=0", Map.of("hello", nodeHello())), "needs a node token");

        String placed = null;
        List<String> elsewhere = new ArrayList<>();
        for (int i = 0; i < 6 && placed == null; i++) {
            String id = api.createSandbox();
            if ("n4".equals(nodeOf(id))) {
                placed = id;
            } else {
                elsewhere.add(id);
            }
        }
        assertTrue(placed != null, "the least loaded node, n4, got a sandbox");
        assertEquals("polled\n", Api.sh(api, placed, "echo polled | tee /work/p.txt"));
        assertEquals("polled\n", new String(api.raw("GET", "/v1/sandboxes/" + placed + "/files?path=/work/p.txt", null).body()));
        assertError(409, api.post("/v1/sandboxes/" + placed + "/ports", Map.of("port", SandboxPortsIT.PORT)),
                "dials in to the master and has no address");
        Api.expect(201, api.post("/v1/sandboxes/" + placed + "/branch", Map.of("tag", "fleet-pulled")));
        assertError(409, api.post("/v1/sandboxes", Map.of("snapshot_tag", "fleet-pulled", "node_id", "n1")),
                "dials in and has no address");
        List<String> children = new ArrayList<>(api.fork("fleet-pulled", 2));
        for (String child : children) {
            assertEquals("n4", nodeOf(child), "a tag of a node that dials in forks only there");
        }
        String onN1 = Api.expect(201, api.post("/v1/sandboxes", Map.of("node_id", "n1"))).get("id").asText();
        elsewhere.add(onN1);
        Api.expect(201, api.post("/v1/sandboxes/" + onN1 + "/branch", Map.of("tag", "fleet-to-pull")));
        children.addAll(forkOn("fleet-to-pull", 1, "n4"));
        assertEquals("n4", nodeOf(children.get(2)), "a node that dials in fetches from a listening holder");
        for (String id : children) {
            Api.expect(204, api.delete("/v1/sandboxes/" + id));
        }
        Api.expect(204, api.delete("/v1/snapshots/fleet-pulled"));
        Api.expect(204, api.delete("/v1/snapshots/fleet-to-pull"));
        assertEquals(null, imageOn("n4", "fleet-to-pull"), "the copy on the node that dials in went with the tag");
        for (String id : elsewhere) {
            Api.expect(204, api.delete("/v1/sandboxes/" + id));
        }
        Api.expect(204, api.delete("/v1/sandboxes/" + placed));
        assertEquals(null, nodeOf(placed));

        Api.expect(200, api.post("/v1/node/revoke/n4", null));
        assertEquals("revoked", nodesById().get("n4").get("state").asText());
        nodes.get("n4").awaitOutput("revoked or unknown to the master", Duration.ofSeconds(30));
    }

    @Test
    @Order(71)
    void aVmIsPlacedOnANodeThatRunsItsBackendAndDrivenThroughTheMastersVmRoutes() throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        NetNamespace ns = NetNamespace.create(5);
        namespaces.add(ns);
        startVmNode("v5", ns);

        assertError(400, api.post("/v1/vms", Map.of("backend", "firecracker")), "no node runs backend firecracker");
        String process = api.createSandbox(Map.of("backend", "procbox"));
        String vm = Api.expect(201, api.post("/v1/vms", Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1)))
                .get("id").asText();
        assertEquals("v5", nodeOf(vm), "the one node that runs qemu runs the VM");
        assertEquals("vm\n", Api.sh(api, vm, "echo vm"), "and the sandbox routes reach it");
        assertEquals("qemu", Api.expect(200, api.get("/v1/vms/" + vm)).get("backend").asText());
        Set<String> vms = new HashSet<>();
        Api.expect(200, api.get("/v1/vms")).forEach(v -> vms.add(v.get("id").asText()));
        assertTrue(vms.contains(vm) && !vms.contains(process), "the master's VM list has the VM, not the process sandbox: " + vms);
        assertError(404, api.get("/v1/vms/" + process), "process sandbox");
        assertEquals("running", Api.expect(200, api.get("/v1/sandboxes/" + process)).get("status").asText(),
                "a VM route's 404 leaves the process sandbox's placement alone");
        Api other = api.as(OTHER_TENANT_TOKEN);
        assertEquals(404, other.get("/v1/vms/" + vm).status(), "another tenant's VM is 404 at the master");
        assertEquals(404, other.post("/v1/vms/" + vm + "/stop", null).status());

        assertEquals("stopped", Api.expect(200, api.post("/v1/vms/" + vm + "/stop", null)).get("status").asText());
        assertEquals("running", Api.expect(200, api.post("/v1/vms/" + vm + "/start", null)).get("status").asText());
        assertEquals("again\n", Api.sh(api, vm, "echo again"));
        Api.expect(204, api.delete("/v1/vms/" + vm));
        assertEquals(404, api.get("/v1/vms/" + vm).status());
        assertEquals(null, nodeOf(vm), "deleted on its node");
        Api.expect(204, api.delete("/v1/sandboxes/" + process));
    }

    /** Nodes that run VMs: qemu, and gvisor where runsc can run. */
    private static void startVmNode(String id, NetNamespace ns) throws Exception {
        String features = NODE_FEATURES + ",qemu" + (Host.gvisorMissing() == null ? ",gvisor" : "");
        nodes.put(id, daemons.keepForClass(daemons.startNode(tmp.resolve(id), ns, id, List.of("--features", features))));
        Api.expect(201, api.post("/v1/nodes", addBody(nodes.get(id), id)));
        awaitNodeState(id, "connected", Duration.ofSeconds(30));
    }

    @Test
    @Order(72)
    void aVmsImageMovesToAnotherNodeAsAFlatCopyAndItsChildResumesThere() throws Exception {
        Assumptions.assumeTrue(nodes.containsKey("v5"), "needs the qemu node of the test before: " + Host.qemuMissing("default"));
        NetNamespace ns = NetNamespace.create(6);
        namespaces.add(ns);
        startVmNode("v6", ns);

        List<String> backends = new ArrayList<>(List.of("qemu"));
        if (Host.gvisorMissing() == null) {
            backends.add("gvisor");
        }
        for (String backend : backends) {
            String parent = Api.expect(201, api.post("/v1/sandboxes", Map.of("backend", backend, "node_id", "v5"))).get("id").asText();
            Api.sh(api, parent, "echo " + backend + "-state > /work/state.txt && sync");
            String sleeper = Api.sh(api, parent, "sleep 100000 >/dev/null 2>&1 </dev/null & echo $!").strip();
            String tag = "fleet-" + backend;
            Api.expect(201, api.post("/v1/sandboxes/" + parent + "/branch", Map.of("tag", tag)));

            String child = forkOn(tag, 1, "v6").get(0);
            assertEquals("v6", nodeOf(child));
            assertEquals(backend + "-state\n", Api.sh(api, child, "cat /work/state.txt"),
                    "the " + backend + " child resumes on v6 with its parent's files");
            assertEquals("alive\n", Api.sh(api, child, "kill -0 " + sleeper + " && echo alive"), "and its processes");
            Path copy = imageOn("v6", tag);
            assertTrue(copy != null && Files.isDirectory(copy), "v6 keeps the copy of " + tag);
            assertTrue(Files.isDirectory(imageOn("v5", tag).resolveSibling("export")), "v5 keeps the flat copy it sent");

            Api.expect(204, api.delete("/v1/sandboxes/" + child));
            Api.expect(204, api.delete("/v1/sandboxes/" + parent));
            Api.expect(204, api.delete("/v1/snapshots/" + tag));
            assertEquals(null, imageOn("v6", tag), "v6 dropped its copy with the tag");
            assertEquals(null, imageOn("v5", tag), "and v5 the tag with its flat copy");
        }
        for (String vmNode : List.of("v5", "v6")) {
            Api.expect(200, api.post("/v1/node/revoke/" + vmNode, null));
        }
    }

    /** A hello as a node sends it, for requests the test makes itself. */
    private static Map<String, Object> nodeHello() {
        return Map.of("node_id", "x", "version", "0.1.0", "fingerprint", Map.of("engine_version", "0.1.0"), "max_sandboxes", 1,
                "sandboxes", 0, "mem_available_mib", 1);
    }

    @Test
    @Order(8)
    void aMasterKilledAndStartedAgainKeepsItsNodesAndPlacementsAndAdoptsTheChildrenOfAForkItDiedIn() throws Exception {
        String sb = api.createSandbox();
        Api.sh(api, sb, "echo before > /work/m.txt");
        Api.expect(201, api.post("/v1/sandboxes/" + sb + "/branch", Map.of("tag", "fleet-crash")));
        master.kill9();
        // the master halts (as kill -9 would) after the first node made its part of a fork's children, before it
        // recorded them; the fork's other part, if it was spread, was never asked for
        master = startMaster(List.of("-Dvivarium.test.halt.at=fleet.fork.placed#1"));
        awaitListenNodesConnected();
        Set<String> before = ids();
        assertThrows(IOException.class, () -> api.post("/v1/sandboxes", Map.of("snapshot_tag", "fleet-crash", "n", 2)));
        assertTrue(master.awaitExit(Duration.ofSeconds(30)), "the master halted at the test point");
        master = startMaster();
        awaitListenNodesConnected();
        Bounded.until(Duration.ofSeconds(30), "the nodes list the children made before the master died", () -> {
            try {
                return ids().size() > before.size();
            } catch (Exception e) {
                return false;
            }
        });
        Set<String> children = new HashSet<>(ids());
        children.removeAll(before);
        assertTrue(children.size() == 1 || children.size() == 2, "one part of the fork, or all of it: " + children);
        for (String child : children) {
            Bounded.until(Duration.ofSeconds(30), "the master knows where child " + child + " runs", () -> {
                try {
                    return api.get("/v1/sandboxes/" + child).status() == 200;
                } catch (Exception e) {
                    return false;
                }
            });
            assertEquals("before\n", Api.sh(api, child, "cat /work/m.txt"), "an adopted child is driven through the master");
            Api.expect(204, api.delete("/v1/sandboxes/" + child));
        }
        Api.expect(204, api.delete("/v1/snapshots/fleet-crash"));
        assertEquals(Set.of("n1", "n2", "n3", "n4"), nodesById().keySet(), "nodes are kept across the master's restarts");
        assertEquals("before\n", Api.sh(api, sb, "cat /work/m.txt"));
    }

    @Test
    @Order(9)
    void aMasterKilledAfterANodeFetchedAnImageAdoptsTheCopyWhenItStartsSoTheTagsDeleteDropsIt() throws Exception {
        String sb = Api.expect(201, api.post("/v1/sandboxes", Map.of("node_id", "n1"))).get("id").asText();
        Api.sh(api, sb, "echo img > /work/i.txt");
        Api.expect(201, api.post("/v1/sandboxes/" + sb + "/branch", Map.of("tag", "fleet-mid")));
        master.kill9();
        // the master halts (as kill -9 would) after n2 fetched the image, before it recorded the copy
        master = startMaster(List.of("-Dvivarium.test.halt.at=fleet.image.fetched#1"));
        awaitListenNodesConnected();
        assertThrows(IOException.class, () -> api.post("/v1/sandboxes", Map.of("snapshot_tag", "fleet-mid", "node_id", "n2")));
        assertTrue(master.awaitExit(Duration.ofSeconds(30)), "the master halted at the test point");
        assertTrue(imageOn("n2", "fleet-mid") != null, "n2 holds the copy the master did not record");

        master = startMaster();
        awaitListenNodesConnected();
        master.awaitOutput("node n2's tags reconciled", Duration.ofSeconds(30));
        Api.expect(204, api.delete("/v1/snapshots/fleet-mid"));
        assertEquals(null, imageOn("n2", "fleet-mid"), "the adopted copy went with the tag");
        assertEquals(null, imageOn("n1", "fleet-mid"));
        Api.expect(204, api.delete("/v1/sandboxes/" + sb));
    }

    private static Set<String> ids() throws Exception {
        Set<String> ids = new HashSet<>();
        for (JsonNode s : Api.expect(200, api.get("/v1/sandboxes"))) {
            assertTrue(ids.add(s.get("id").asText()), "listed once: " + s);
        }
        return ids;
    }

    private static void awaitListenNodesConnected() throws Exception {
        try {
            Bounded.until(Duration.ofSeconds(30), "the nodes are connected again", () -> {
                try {
                    return nodesById().values().stream().filter(n -> !"revoked".equals(n.get("state").asText()))
                        .allMatch(n -> "connected".equals(n.get("state").asText()));
                } catch (Exception e) {
                    return false;
                }
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; GET /v1/nodes: " + api.get("/v1/nodes").raw().body()
                    + "; the master said:\n" + String.join("\n", master.output()), e);
        }
    }

    private static void assertError(int status, Api.Response r, String fragment) {
        assertEquals(status, r.status(), r.raw().body());
        assertTrue(r.error().contains(fragment), "'" + fragment + "' in: " + r.error());
    }
}
