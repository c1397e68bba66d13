package io.vivarium.itests.e2e;

import static io.vivarium.itests.e2e.Api.expect;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;

import com.fasterxml.jackson.databind.JsonNode;

import io.vivarium.testkit.Bounded;
import io.vivarium.testkit.OciTestImages;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OpenAPI document is the contract: this test drives every documented operation of one daemon
 * (procbox, the default backend, and qemu), successes and typical refusals, through the e2e client,
 * which judges each request and answer by docs/openapi.json and fails at the first thing the
 * document does not allow (a status, a content type, a field: the schemas forbid additional
 * properties). The daemon must serve that very document. The machine routes, pause and resume and
 * a sandbox's checkpoints run on one QEMU VM. At the end it fails when a documented operation was
 * never answered with a success; only on a host without QEMU, where the VM test is skipped with the
 * reason, are the operations only a VM answers excused.
 */
class OpenApiContractIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    /** What only a machine with checkpoints that can pause answers with a success: excused only where the host cannot run one. */
    private static final Set<String> ONLY_ON_A_VM = Set.of("POST /v1/vms", "GET /v1/vms/{id}", "DELETE /v1/vms/{id}",
            "POST /v1/vms/{id}/stop", "POST /v1/vms/{id}/start", "POST /v1/vms/{id}/snapshot",
            "POST /v1/vms/{id}/restore", "GET /v1/vms/{id}/checkpoints", "DELETE /v1/vms/{id}/checkpoints/{tag}",
            "POST /v1/sandboxes/{id}/pause", "POST /v1/sandboxes/{id}/resume",
            "GET /v1/sandboxes/{id}/checkpoints", "POST /v1/sandboxes/{id}/checkpoints",
            "POST /v1/sandboxes/{id}/checkpoints/{tag}/restore", "DELETE /v1/sandboxes/{id}/checkpoints/{tag}");

    @TempDir
    static Path dir;
    /** The operator's client (every route accepts it), recording each operation that answered a success. */
    static Api api;
    static Daemon daemon;
    static final Set<String> succeeded = new ConcurrentSkipListSet<>();
    /** Why the VM test was skipped, or null. */
    static volatile String noVm;
    /** Why the port test was skipped, or null. */
    static volatile String noNetwork;
    /** Why the template test was skipped, or null. */
    static volatile String noImages;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        daemon = daemons.start(dir.resolve("state"),
                List.of("--features", "core,api-v1,procbox,qemu,images-oci,fingerprint-sha256,fingerprint-stat,metrics,storage-reflink"),
                List.of("-Dvivarium.default.backend=procbox"));
        api = new Api(daemon.baseUrl(), daemon.adminToken()).recordingSuccessesIn(succeeded);
        var served = api.raw("GET", "/v1/openapi.json", null);
        assertEquals(200, served.statusCode());
        assertArrayEquals(Files.readAllBytes(Path.of("../docs/openapi.json")), served.body(),
                "the daemon serves docs/openapi.json as it is in the tree");
    }

    @Test
    void daemonRoutes() throws Exception {
        api.get("/healthz");
        api.get("/version");
        api.raw("GET", "/metrics", null);
        api.get("/v1/backends");
        Api.Response anonymous = api.as(null).get("/v1/backends");
        assertEquals(401, anonymous.status());
        assertTrue(anonymous.error().contains("bearer"), anonymous.error());
    }

    @Test
    void sandboxRoutes() throws Exception {
        api.post("/v1/sandboxes", "{\"memory_limit_mib\": 128, \"pids_limit\": 64}");
        String id = expect(201, api.post("/v1/sandboxes", null)).get("id").asText();
        String sb = "/v1/sandboxes/" + id;
        api.get("/v1/sandboxes");
        api.get(sb);
        api.post(sb + "/ping", null);
        api.post(sb + "/exec", "{\"args\": [\"sh\", \"-c\", \"echo hi; echo oops >&2; exit 3\"], \"timeout_secs\": 10,"
                + " \"env\": {\"A\": \"b\"}, \"cwd\": \"/work\", \"stdin\": \"\", \"max_output_bytes\": 1024}");
        api.post(sb + "/exec", "{\"args\": [\"sleep\", \"30\"], \"timeout_secs\": 1}");
        api.post(sb + "/eval", "{\"code\": \"x = 41\"}");
        api.post(sb + "/eval", "{\"code\": \"print(x)\\nx + 1\"}");
        api.post(sb + "/eval", "{\"code\": \"1 / 0\", \"timeout_secs\": 5}");
        api.sendBytes("PUT", sb + "/files?path=/work/f.txt", "some bytes".getBytes(StandardCharsets.UTF_8));
        api.raw("GET", sb + "/files?path=/work/f.txt", null);
        api.raw("GET", sb + "/files?path=/work/missing", null);
        api.post(sb + "/changes", null);  // 404: no baseline yet
        api.post(sb + "/baseline", "{\"paths\": [\"/work\"]}");
        api.post(sb + "/exec", "{\"args\": [\"sh\", \"-c\", \"echo x > /work/new\"]}");
        api.post(sb + "/changes", "{}");
        api.post(sb + "/dry-run", "{\"command\": \"echo y > /work/other; rm /work/f.txt\", \"paths\": [\"/work\"], \"timeout_secs\": 10}");
        String command = expect(201, api.post(sb + "/commands", "{\"args\": [\"sh\", \"-c\", \"echo a; sleep 30\"]}"))
                .get("id").asText();
        api.get(sb + "/commands");
        api.get(sb + "/commands/" + command);
        api.stream("GET", sb + "/commands/" + command + "/events?from=0", null).body().close();
        api.get(sb + "/commands/" + command + "/output?from=0&wait_ms=10");
        String reader = expect(201, api.post(sb + "/commands?stdin=open", "{\"args\": [\"cat\"]}")).get("id").asText();
        api.sendBytes("POST", sb + "/commands/" + reader + "/stdin?eof=true", "in".getBytes(StandardCharsets.UTF_8));
        String tty = expect(201, api.post(sb + "/commands?tty=true&rows=5&cols=7", "{\"args\": [\"sleep\", \"30\"]}")).get("id").asText();
        api.post(sb + "/commands/" + tty + "/resize", "{\"rows\": 6, \"cols\": 8}");
        api.post(sb + "/commands/" + tty + "/signal", "{\"signal\": 9}");
        api.get(sb + "/pty"); // 400: not a WebSocket upgrade
        try (Terminal t = new Terminal(daemon.baseUrl(), daemon.adminToken(), sb + "/pty?rows=5&cols=7")) {
            assertEquals("started", t.message().get("type").asText());
            succeeded.add("GET /v1/sandboxes/{id}/pty"); // the JDK's WebSocket client checked the 101 and its headers
        }
        api.post(sb + "/commands/" + command + "/signal", "{\"signal\": 9}");
        api.post(sb + "/commands/" + command + "/wait?timeout_secs=10", null);
        api.stream("POST", sb + "/exec/stream", "{\"args\": [\"echo\", \"streamed\"]}").body().readAllBytes();
        // requests the document forbids are refused with the error body
        Api outside = api.outsideTheContract();
        assertEquals(400, outside.post(sb + "/exec", "{\"args\": [\"true\"], \"nope\": 1}").status());
        assertEquals(400, outside.post(sb + "/exec", "{\"args\": \"true\"}").status());
        assertEquals(400, outside.post(sb + "/eval", "{\"code\": \"1\", \"timeout_secs\": 0}").status());
        assertEquals(400, outside.post(sb + "/baseline", "{}").status());
        api.post("/v1/sandboxes", "{\"backend\": \"no-such-backend\"}");
        api.get("/v1/sandboxes/sb-does-not-exist");
        api.delete(sb);
        api.delete(sb);  // 404 now
    }

    @Test
    void portRoutes() throws Exception {
        if (!Files.isExecutable(Path.of("/usr/sbin/nft"))) {
            noNetwork = "no nftables here (apt-get install nftables): no sandbox gets a network to expose a port of";
            Assumptions.abort(noNetwork);
        }
        String id = SandboxPortsIT.serving(api, SandboxPortsIT.PORT);
        String sb = "/v1/sandboxes/" + id;
        api.post(sb + "/ports", "{\"port\": " + SandboxPortsIT.PORT + ", \"expires_in_secs\": 60}");
        api.get(sb + "/ports");
        api.get(sb + "/ports/" + SandboxPortsIT.PORT);
        String base = sb + "/ports/" + SandboxPortsIT.PORT + "/";
        for (String method : List.of("GET", "HEAD", "OPTIONS")) {
            api.raw(method, base + "page?q=1", null);
        }
        for (String method : List.of("POST", "PUT", "PATCH", "DELETE")) {
            api.raw(method, base + "item/1", "{}".getBytes(StandardCharsets.UTF_8));
        }
        api.get(sb + "/ports/1/"); // 404: not exposed
        api.delete(sb + "/ports/" + SandboxPortsIT.PORT);
        api.delete(sb + "/ports/" + SandboxPortsIT.PORT); // 404 now
        api.delete(sb);
    }

    @Test
    void snapshotRoutes() throws Exception {
        api.post("/v1/snapshots", "{\"tag\": \"oa-base\", \"boot_wait_secs\": 0, \"setup\": [\"sh\", \"-c\", \"echo t > /work/t\"]}");
        api.post("/v1/snapshots", "{\"tag\": \"oa-base\"}");  // 400: exists
        api.get("/v1/snapshots");
        api.get("/v1/snapshots/oa-base/info");
        api.get("/v1/snapshots/oa-nope/info");
        JsonNode children = expect(201, api.post("/v1/sandboxes", "{\"snapshot_tag\": \"oa-base\", \"n\": 2, \"per_child_netns\": true}"));
        String child = "/v1/sandboxes/" + children.get(0).get("id").asText();
        api.post("/v1/sandboxes", "{\"snapshot_tag\": \"oa-nope\"}");
        api.post("/v1/sandboxes", "{\"snapshot_tag\": \"oa-base\", \"live_fork\": true}");
        api.post("/v1/sandboxes", "{\"snapshot_tag\": \"oa-base\", \"n\": 1000}");  // 503
        api.post(child + "/touch", null);
        api.post(child + "/branch", "{\"tag\": \"oa-br\"}");
        api.post(child + "/branch", "{\"tag\": \"oa-br\"}");  // 409
        api.post(child + "/branch", "{\"tag\": \"x\", \"live\": true}");
        api.post("/v1/snapshots/oa-br/compact", "{\"to\": \"oa-flat\"}");
        api.post("/v1/snapshots/oa-br/compact", "{\"to\": \"oa-br\"}");  // 400
        api.delete("/v1/snapshots/oa-base");  // 409: oa-br depends on it
        api.delete("/v1/snapshots/oa-base?cascade=true&force=true");
        api.delete("/v1/snapshots/oa-base?cascade=true");
        api.delete("/v1/snapshots/oa-flat");
        assertEquals(400, api.outsideTheContract().post("/v1/snapshots", "{\"tag\": \"../x\"}").status());
        for (JsonNode c : children) {
            api.delete("/v1/sandboxes/" + c.get("id").asText());
        }
    }

    /** The machine routes, and pause, resume and checkpoints, refuse a process sandbox (procbox has none of them). */
    @Test
    void vmRoutesRefuseWhatIsNotAVm() throws Exception {
        api.get("/v1/vms");
        api.post("/v1/vms", "{\"backend\": \"procbox\"}");  // 400: not a machine
        api.post("/v1/vms", "{}");  // 400: backend required
        String sandbox = expect(201, api.post("/v1/sandboxes", null)).get("id").asText();
        String vm = "/v1/vms/" + sandbox;
        api.get(vm);  // 404: a process sandbox is no VM
        api.post(vm + "/stop", null);
        api.post(vm + "/start", null);
        api.post(vm + "/snapshot", "{\"tag\": \"t1\"}");
        api.post(vm + "/restore", "{\"tag\": \"t1\"}");
        api.delete(vm);
        api.post("/v1/sandboxes/" + sandbox + "/pause", null);  // 501: procbox cannot pause
        api.post("/v1/sandboxes/" + sandbox + "/resume", null);
        api.post("/v1/sandboxes/sb-does-not-exist/pause", null);
        api.post("/v1/vms/sb-does-not-exist/restore", "{\"tag\": \"t1\"}");
        api.get(vm + "/checkpoints");  // 404: not a VM
        api.delete(vm + "/checkpoints/t1");
        assertEquals(400, api.outsideTheContract().post(vm + "/snapshot", "{\"tag\": \"../../etc\"}").status());
        assertEquals(400, api.outsideTheContract().post(vm + "/restore", "{\"tag\": \"a/b\"}").status());
        api.delete("/v1/sandboxes/" + sandbox);
    }

    /** A sandbox's checkpoints, against a backend that has none (procbox): each route answers 501, a bad tag 400. */
    @Test
    void checkpointRoutesRefuseABackendWithoutCheckpoints() throws Exception {
        String sb = "/v1/sandboxes/" + expect(201, api.post("/v1/sandboxes", null)).get("id").asText();
        api.get(sb + "/checkpoints");
        api.post(sb + "/checkpoints", "{\"tag\": \"t1\"}");
        api.post(sb + "/checkpoints/t1/restore", null);
        api.delete(sb + "/checkpoints/t1");
        api.get("/v1/sandboxes/sb-does-not-exist/checkpoints");
        assertEquals(400, api.outsideTheContract().post(sb + "/checkpoints", "{\"tag\": \"../x\"}").status());
        api.delete(sb);
    }

    /**
     * One QEMU VM through its life: created, listed, paused and resumed, checkpointed and restored
     * through both the machine routes and a sandbox's, stopped and started, deleted; with the
     * refusals on the way (a missing checkpoint, an exec into a stopped VM).
     */
    @Test
    void vmRoutesOnOneVm() throws Exception {
        noVm = Host.qemuMissing("default");
        Assumptions.assumeTrue(noVm == null, noVm);
        JsonNode created = expect(201, api.post("/v1/vms", Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1)));
        String id = created.get("id").asText();
        String vm = "/v1/vms/" + id;
        String sb = "/v1/sandboxes/" + id;
        assertTrue(expect(200, api.get("/v1/vms")).findValuesAsText("id").contains(id));
        assertEquals("running", expect(200, api.get(vm)).get("status").asText());

        assertEquals("paused", expect(200, api.post(sb + "/pause", null)).get("status").asText());
        api.post(sb + "/pause", null);  // 409: paused already
        assertEquals("running", expect(200, api.post(sb + "/resume", null)).get("status").asText());

        expect(201, api.post(vm + "/snapshot", "{\"tag\": \"oa-vm\"}"));
        api.post(vm + "/snapshot", "{\"tag\": \"oa-vm\"}");  // 409: taken
        assertTrue(expect(200, api.get(vm + "/checkpoints")).findValuesAsText("tag").contains("oa-vm"));
        expect(200, api.post(vm + "/restore", "{\"tag\": \"oa-vm\"}"));
        api.post(vm + "/restore", "{\"tag\": \"oa-none\"}");  // 404
        expect(201, api.post(sb + "/checkpoints", "{\"tag\": \"oa-sb\"}"));
        assertTrue(expect(200, api.get(sb + "/checkpoints")).findValuesAsText("tag").contains("oa-sb"));
        expect(200, api.post(sb + "/checkpoints/oa-sb/restore", null));
        api.post(sb + "/checkpoints/oa-none/restore", null);  // 404
        expect(204, api.delete(sb + "/checkpoints/oa-sb"));
        expect(204, api.delete(vm + "/checkpoints/oa-vm"));
        api.delete(vm + "/checkpoints/oa-vm");  // 404 now

        assertEquals("stopped", expect(200, api.post(vm + "/stop", null)).get("status").asText());
        api.post(sb + "/exec", "{\"args\": [\"true\"]}");  // 409: stopped
        assertEquals("running", expect(200, api.post(vm + "/start", null)).get("status").asText());
        expect(204, api.delete(vm));
        expect(404, api.get(vm));
    }

    /**
     * The fleet's routes, on a master of their own (so that its nodes take none of the other tests'
     * sandboxes): a listening node on this host's loopback added and revoked; the node routes a
     * node that dials in uses, with a token and a credential the master issued; and the hello and
     * census every daemon with the fleet feature answers.
     */
    @Test
    void fleetRoutes() throws Exception {
        Daemon master = daemons.start(dir.resolve("fleet-master"), List.of("--features", "core,api-v1,procbox,fingerprint-sha256,storage-reflink,fleet"));
        Daemon node = daemons.startNode(dir.resolve("fleet-node"), null, "oa-node", List.of("--features", "core,api-v1,procbox,fingerprint-sha256,storage-reflink"));
        Api fleet = new Api(master.baseUrl(), master.adminToken()).recordingSuccessesIn(succeeded);
        expect(201, fleet.post("/v1/nodes", Map.of("address", node.address(), "pairing_code", node.pairingCode())));
        fleet.post("/v1/nodes", Map.of("address", node.address(), "pairing_code", node.pairingCode()));  // 409: connected
        expect(200, fleet.get("/v1/nodes"));
        String onNode = fleet.createSandbox();
        expect(201, fleet.post("/v1/sandboxes/" + onNode + "/branch", Map.of("tag", "oa-img")));
        String[] code = node.pairingCode().split("\\.");
        Api nodeApi = new Api(node.baseUrl(), code[1]).recordingSuccessesIn(succeeded); // as the master calls it
        expect(200, nodeApi.get("/v1/node/images"));
        JsonNode issued = expect(201, nodeApi.post("/v1/node/images/tickets", Map.of("tag", "oa-img")));
        String file = null;
        for (JsonNode e : issued.get("manifest").get("entries")) {
            file = "file".equals(e.get("type").asText()) ? e.get("path").asText() : file;
        }
        expect(200, nodeApi.as(issued.get("ticket").asText()).get("/v1/node/images/file?path="
                + java.net.URLEncoder.encode(file, java.nio.charset.StandardCharsets.UTF_8)));
        // the master itself fetches the node's image, as a node lacking it would
        expect(204, fleet.post("/v1/node/images/fetch", Map.of("address", node.address(), "certificate_sha256", code[0],
                "ticket", issued.get("ticket").asText(), "manifest", issued.get("manifest"))));
        expect(204, fleet.delete("/v1/sandboxes/" + onNode));
        JsonNode hello = expect(200, fleet.get("/v1/node/hello"));
        expect(200, fleet.get("/v1/node/sandboxes"));
        String token = expect(201, fleet.post("/v1/node/tokens", Map.of("ttl_secs", 60))).get("token").asText();
        JsonNode registered = expect(201, fleet.as(token).post("/v1/node/register", Map.of("node_id", "oa-pull", "hello", hello)));
        Api polling = fleet.as(registered.get("credential").asText());
        expect(200, polling.post("/v1/node/poll?hold_secs=0", Map.of("hello", hello)));
        expect(204, polling.post("/v1/node/results", Map.of("results", List.of())));
        expect(200, fleet.post("/v1/node/revoke/oa-pull", null));
        expect(200, fleet.post("/v1/node/revoke/oa-node", null));
        fleet.post("/v1/node/revoke/no-such", null);  // 404
        assertEquals(401, polling.post("/v1/node/poll?hold_secs=0", Map.of("hello", hello)).status(), "a revoked node's credential is refused");
    }

    @Test
    void administrationRoutes() throws Exception {
        api.get("/v1/plugins");
        api.get("/v1/features");
        api.sendBytes("POST", "/v1/plugins", BundleJars.bundle("test.contract", "1.0.0", null));
        api.sendBytes("POST", "/v1/plugins", BundleJars.bundle("test.contract", "1.0.0", null)); // 409
        api.sendBytes("PUT", "/v1/plugins/test.contract", BundleJars.bundle("test.contract", "1.1.0", null));
        api.delete("/v1/plugins/test.contract");
        api.delete("/v1/plugins/test.contract");  // 404 now
        api.post("/v1/features/fingerprint-stat/disable", null);
        api.post("/v1/features/fingerprint-stat/enable", null);
        api.post("/v1/features/no-such/enable", null);
        api.post("/v1/features/core/disable", null);
    }

    @Test
    void volumeRoutes() throws Exception {
        expect(201, api.post("/v1/volumes", "{\"name\": \"contract\", \"size_mib\": 16}"));
        api.post("/v1/volumes", "{\"name\": \"contract\", \"size_mib\": 16}"); // 409: taken
        String id = expect(201, api.post("/v1/sandboxes", "{\"volumes\": [{\"name\": \"contract\", \"mount_path\": \"/data\","
                + " \"sub_path\": \"a\", \"read_only\": false}]}")).get("id").asText();
        api.get("/v1/volumes");
        api.get("/v1/volumes/contract");
        api.get("/v1/volumes/missing"); // 404
        api.delete("/v1/volumes/contract"); // 409: mounted
        expect(204, api.delete("/v1/sandboxes/" + id));
        expect(204, api.delete("/v1/volumes/contract"));
        assertEquals(400, api.outsideTheContract().post("/v1/volumes", "{\"name\": \"x\", \"size_mib\": 1}").status());
    }

    @Test
    void templateRoutes() throws Exception {
        noImages = OciTestImages.missingTools();
        Assumptions.assumeTrue(noImages == null, noImages);
        String layout = OciTestImages.layout(dir.resolve("contract-image"));
        int status = api.post("/v1/templates", "{\"name\": \"contract\", \"backend\": \"procbox\", \"image\": \"" + layout
                + "\", \"client_may_set\": [\"memory_limit_mib\"]}").status();
        assertTrue(status == 201 || status == 202, "made: " + status);
        api.post("/v1/templates", "{\"name\": \"contract\", \"image\": \"" + layout + "\"}"); // 409: taken
        api.post("/v1/templates", "{\"name\": \"bad\", \"image\": \"ubuntu\"}"); // 400
        Bounded.until(Duration.ofSeconds(60), "the template is built", () -> {
            try {
                return expect(200, api.get("/v1/templates/contract")).get("state").asText().equals("ready");
            } catch (Exception e) {
                return false;
            }
        });
        api.get("/v1/templates");
        api.get("/v1/templates/missing"); // 404
        String id = expect(201, api.post("/v1/sandboxes", "{\"template\": \"contract\", \"memory_limit_mib\": 128}"))
                .get("id").asText();
        api.post("/v1/sandboxes", "{\"template\": \"contract\", \"pids_limit\": 64}"); // 403: not the client's
        api.delete("/v1/templates/contract"); // 409: a sandbox of it runs
        expect(204, api.delete("/v1/sandboxes/" + id));
        expect(204, api.delete("/v1/templates/contract"));
    }

    @AfterAll
    static void everyDocumentedOperationSucceeded() {
        if (api == null) {
            return;
        }
        Set<String> missing = new TreeSet<>(OpenApiContract.docs().operations());
        missing.removeAll(succeeded);
        if (noVm != null) {
            missing.removeAll(ONLY_ON_A_VM);
        }
        if (noNetwork != null) {
            missing.removeIf(op -> op.contains("/ports"));
        }
        if (noImages != null) {
            missing.removeIf(op -> op.contains("/templates"));
        }
        assertTrue(missing.isEmpty(), "documented operations no test answered with a success: " + missing);
    }
}
