package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OpenAPI document is the contract: this test drives every documented operation of a procbox
 * daemon (successes and typical refusals) and checks each request and answer against the
 * document the daemon serves at /v1/openapi.json, which must be docs/openapi.json. It fails when a
 * route answers something the document does not allow (a status, a content type, a field: the
 * response schemas forbid additional properties) and, at the end, when a documented operation
 * was never exercised with a success.
 */
class OpenApiContractIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static String token;
    static OpenApiContract contract;
    static final List<String> problems = new ArrayList<>();
    static final Set<String> succeeded = new TreeSet<>();

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        daemon = daemons.start(dir.resolve("state"));
        token = daemon.adminToken(); // the operator's, which every route accepts
        HttpResponse<byte[]> served = send("GET", "/v1/openapi.json", null, null, token);
        assertEquals(200, served.statusCode());
        assertArrayEquals(Files.readAllBytes(Path.of("../docs/openapi.json")), served.body(),
                "the daemon serves docs/openapi.json as it is in the tree");
        contract = new OpenApiContract(served.body());
        check("GET", "/v1/openapi.json", null, null, served);
    }

    @Test
    void daemonRoutes() throws Exception {
        call("GET", "/healthz", null, null);
        call("GET", "/version", null, null);
        call("GET", "/metrics", null, null);
        call("GET", "/v1/backends", null, null);
        HttpResponse<byte[]> refused = send("GET", "/v1/backends", null, null, null);
        check("GET", "/v1/backends", null, null, refused);
        JsonNode anonymous = json(refused);
        assertTrue(anonymous.get("error").asText().contains("bearer"), anonymous.toString());
    }

    @Test
    void sandboxRoutes() throws Exception {
        call("POST", "/v1/sandboxes", "application/json", "{\"memory_limit_mib\": 128, \"pids_limit\": 64}");
        String id = json(call("POST", "/v1/sandboxes", null, null)).get("id").asText();
        call("GET", "/v1/sandboxes", null, null);
        call("GET", "/v1/sandboxes/" + id, null, null);
        call("POST", "/v1/sandboxes/" + id + "/ping", null, null);
        call("POST", "/v1/sandboxes/" + id + "/exec", "application/json",
                "{\"args\": [\"sh\", \"-c\", \"echo hi; echo oops >&2; exit 3\"], \"timeout_secs\": 10, \"env\": {\"A\": \"b\"}, \"cwd\": \"/work\", \"stdin\": \"\", \"max_output_bytes\": 1024}");
        call("POST", "/v1/sandboxes/" + id + "/exec", "application/json", "{\"args\": [\"sleep\", \"30\"], \"timeout_secs\": 1}");
        call("POST", "/v1/sandboxes/" + id + "/eval", "application/json", "{\"code\": \"x = 41\"}");
        call("POST", "/v1/sandboxes/" + id + "/eval", "application/json", "{\"code\": \"print(x)\\nx + 1\"}");
        call("POST", "/v1/sandboxes/" + id + "/eval", "application/json", "{\"code\": \"1 / 0\", \"timeout_secs\": 5}");
        call("PUT", "/v1/sandboxes/" + id + "/files?path=/work/f.txt", "application/octet-stream", "some bytes");
        call("GET", "/v1/sandboxes/" + id + "/files?path=/work/f.txt", null, null);
        call("GET", "/v1/sandboxes/" + id + "/files?path=/work/missing", null, null);
        call("POST", "/v1/sandboxes/" + id + "/changes", null, null);  // 409: no baseline yet
        call("POST", "/v1/sandboxes/" + id + "/baseline", "application/json", "{\"paths\": [\"/work\"]}");
        call("POST", "/v1/sandboxes/" + id + "/exec", "application/json", "{\"args\": [\"sh\", \"-c\", \"echo x > /work/new\"]}");
        call("POST", "/v1/sandboxes/" + id + "/changes", "application/json", "{}");
        call("POST", "/v1/sandboxes/" + id + "/dry-run", "application/json",
                "{\"command\": \"echo y > /work/other; rm /work/f.txt\", \"paths\": [\"/work\"], \"timeout_secs\": 10}");
        // refusals answer the error body; requests the document forbids are refused too
        callOutsideTheContract("POST", "/v1/sandboxes/" + id + "/exec", "{\"args\": [\"true\"], \"nope\": 1}");
        callOutsideTheContract("POST", "/v1/sandboxes/" + id + "/exec", "{\"args\": \"true\"}");
        callOutsideTheContract("POST", "/v1/sandboxes/" + id + "/eval", "{\"code\": \"1\", \"timeout_secs\": 0}");
        callOutsideTheContract("POST", "/v1/sandboxes/" + id + "/baseline", "{}");
        call("POST", "/v1/sandboxes", "application/json", "{\"backend\": \"no-such-backend\"}");
        call("GET", "/v1/sandboxes/sb-does-not-exist", null, null);
        call("DELETE", "/v1/sandboxes/" + id, null, null);
        call("DELETE", "/v1/sandboxes/" + id, null, null);  // 404 now
    }

    @Test
    void snapshotRoutes() throws Exception {
        call("POST", "/v1/snapshots", "application/json",
                "{\"tag\": \"oa-base\", \"boot_wait_secs\": 0, \"setup\": [\"sh\", \"-c\", \"echo t > /work/t\"]}");
        call("POST", "/v1/snapshots", "application/json", "{\"tag\": \"oa-base\"}");  // 400: exists
        call("GET", "/v1/snapshots", null, null);
        call("GET", "/v1/snapshots/oa-base/info", null, null);
        call("GET", "/v1/snapshots/oa-nope/info", null, null);
        JsonNode children = json(call("POST", "/v1/sandboxes", "application/json",
                "{\"snapshot_tag\": \"oa-base\", \"n\": 2, \"per_child_netns\": true}"));
        String child = children.get(0).get("id").asText();
        call("POST", "/v1/sandboxes", "application/json", "{\"snapshot_tag\": \"oa-nope\"}");
        call("POST", "/v1/sandboxes", "application/json", "{\"snapshot_tag\": \"oa-base\", \"live_fork\": true}");
        call("POST", "/v1/sandboxes", "application/json", "{\"snapshot_tag\": \"oa-base\", \"n\": 1000}");  // 503
        call("POST", "/v1/sandboxes/" + child + "/touch", null, null);
        call("POST", "/v1/sandboxes/" + child + "/branch", "application/json", "{\"tag\": \"oa-br\"}");
        call("POST", "/v1/sandboxes/" + child + "/branch", "application/json", "{\"tag\": \"oa-br\"}");  // 409
        call("POST", "/v1/sandboxes/" + child + "/branch", "application/json", "{\"tag\": \"x\", \"live\": true}");
        call("POST", "/v1/snapshots/oa-br/compact", "application/json", "{\"to\": \"oa-flat\"}");
        call("POST", "/v1/snapshots/oa-br/compact", "application/json", "{\"to\": \"oa-br\"}");  // 400
        call("DELETE", "/v1/snapshots/oa-base", null, null);  // 409: oa-br depends on it
        call("DELETE", "/v1/snapshots/oa-base?cascade=true&force=true", null, null);
        call("DELETE", "/v1/snapshots/oa-base?cascade=true", null, null);
        call("DELETE", "/v1/snapshots/oa-flat", null, null);
        callOutsideTheContract("POST", "/v1/snapshots", "{\"tag\": \"../x\"}");
        for (JsonNode c : children) {
            call("DELETE", "/v1/sandboxes/" + c.get("id").asText(), null, null);
        }
    }

    /**
     * The VM routes, against a daemon whose only backend runs process sandboxes: their refusals
     * conform here; their successes need a backend that runs machines and checkpoints them, and are
     * exercised by the QEMU end-to-end tests ({@link #NEED_A_VM}).
     */
    @Test
    void vmRoutesRefuseWhatIsNotAVm() throws Exception {
        call("GET", "/v1/vms", null, null);
        call("POST", "/v1/vms", "application/json", "{\"backend\": \"procbox\"}");  // 400: not a machine
        call("POST", "/v1/vms", "application/json", "{}");  // 400: backend required
        String sandbox = json(call("POST", "/v1/sandboxes", null, null)).get("id").asText();
        call("GET", "/v1/vms/" + sandbox, null, null);  // 404: a process sandbox is no VM
        call("POST", "/v1/vms/" + sandbox + "/stop", null, null);
        call("POST", "/v1/vms/" + sandbox + "/start", null, null);
        call("POST", "/v1/vms/" + sandbox + "/snapshot", "application/json", "{\"tag\": \"t1\"}");
        call("POST", "/v1/vms/" + sandbox + "/restore", "application/json", "{\"tag\": \"t1\"}");
        call("DELETE", "/v1/vms/" + sandbox, null, null);
        call("POST", "/v1/sandboxes/" + sandbox + "/pause", null, null);  // 501: procbox cannot pause
        call("POST", "/v1/sandboxes/" + sandbox + "/resume", null, null);
        call("POST", "/v1/sandboxes/sb-does-not-exist/pause", null, null);
        call("POST", "/v1/vms/sb-does-not-exist/restore", "application/json", "{\"tag\": \"t1\"}");
        call("GET", "/v1/vms/" + sandbox + "/checkpoints", null, null);  // 404: not a VM
        call("DELETE", "/v1/vms/" + sandbox + "/checkpoints/t1", null, null);
        callOutsideTheContract("POST", "/v1/vms/" + sandbox + "/snapshot", "{\"tag\": \"../../etc\"}");
        callOutsideTheContract("POST", "/v1/vms/" + sandbox + "/restore", "{\"tag\": \"a/b\"}");
        call("DELETE", "/v1/sandboxes/" + sandbox, null, null);
    }

    /** A sandbox's checkpoints, against a backend that has none (procbox): each route answers 501, a bad tag 400. */
    @Test
    void checkpointRoutesRefuseABackendWithoutCheckpoints() throws Exception {
        String id = json(call("POST", "/v1/sandboxes", null, null)).get("id").asText();
        call("GET", "/v1/sandboxes/" + id + "/checkpoints", null, null);
        call("POST", "/v1/sandboxes/" + id + "/checkpoints", "application/json", "{\"tag\": \"t1\"}");
        call("POST", "/v1/sandboxes/" + id + "/checkpoints/t1/restore", null, null);
        call("DELETE", "/v1/sandboxes/" + id + "/checkpoints/t1", null, null);
        call("GET", "/v1/sandboxes/sb-does-not-exist/checkpoints", null, null);
        callOutsideTheContract("POST", "/v1/sandboxes/" + id + "/checkpoints", "{\"tag\": \"../x\"}");
        call("DELETE", "/v1/sandboxes/" + id, null, null);
    }

    /**
     * Operations that only succeed on a backend that runs machines with checkpoints and can pause
     * (QEMU), or, for a sandbox's checkpoints, on a backend with checkpoints (QEMU, gVisor).
     */
    static final Set<String> NEED_A_VM = Set.of("POST /v1/vms", "GET /v1/vms/{id}", "DELETE /v1/vms/{id}",
            "POST /v1/vms/{id}/stop", "POST /v1/vms/{id}/start", "POST /v1/vms/{id}/snapshot",
            "POST /v1/vms/{id}/restore", "GET /v1/vms/{id}/checkpoints", "DELETE /v1/vms/{id}/checkpoints/{tag}",
            "POST /v1/sandboxes/{id}/pause", "POST /v1/sandboxes/{id}/resume",
            "GET /v1/sandboxes/{id}/checkpoints", "POST /v1/sandboxes/{id}/checkpoints",
            "POST /v1/sandboxes/{id}/checkpoints/{tag}/restore", "DELETE /v1/sandboxes/{id}/checkpoints/{tag}");

    @Test
    void administrationRoutes() throws Exception {
        call("GET", "/v1/plugins", null, null);
        call("GET", "/v1/features", null, null);
        call("POST", "/v1/plugins", "application/java-archive", BundleJars.bundle("test.contract", "1.0.0", null));
        call("POST", "/v1/plugins", "application/java-archive", BundleJars.bundle("test.contract", "1.0.0", null)); // 409
        call("PUT", "/v1/plugins/test.contract", "application/java-archive", BundleJars.bundle("test.contract", "1.1.0", null));
        call("DELETE", "/v1/plugins/test.contract", null, null);
        call("DELETE", "/v1/plugins/test.contract", null, null);  // 404 now
        call("POST", "/v1/features/fingerprint-stat/disable", null, null);
        call("POST", "/v1/features/fingerprint-stat/enable", null, null);
        call("POST", "/v1/features/no-such/enable", null, null);
        call("POST", "/v1/features/core/disable", null, null);
    }

    @AfterAll
    static void everythingConformedAndEveryOperationWasExercised() {
        if (contract == null) {
            return;
        }
        assertTrue(problems.isEmpty(), "answers the document does not allow:\n" + String.join("\n", problems));
        Set<String> missing = new TreeSet<>(contract.operations());
        missing.removeAll(succeeded);
        missing.removeAll(NEED_A_VM);
        assertTrue(missing.isEmpty(), "documented operations no test exercised with a success: " + missing);
    }

    private static HttpResponse<byte[]> call(String method, String path, String type, Object body) throws Exception {
        byte[] bytes = body == null ? null : body instanceof byte[] b ? b : ((String) body).getBytes(StandardCharsets.UTF_8);
        HttpResponse<byte[]> r = send(method, path, type, bytes, token);
        check(method, path, type, bytes, r);
        return r;
    }

    /** A JSON request the document does not allow: the validator must say so, and the daemon refuse it with 400. */
    private static void callOutsideTheContract(String method, String path, String json) throws Exception {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        HttpResponse<byte[]> r = send(method, path, "application/json", bytes, token);
        List<String> found = contract.check(method, path, "application/json", bytes, r);
        assertEquals(400, r.statusCode(), method + " " + path + " " + json);
        assertTrue(!found.isEmpty() && found.stream().allMatch(p -> p.contains(" request: ")),
                "the validator should flag the request and only the request: " + found);
    }

    private static void check(String method, String path, String type, byte[] body, HttpResponse<byte[]> r) {
        List<String> found = contract.check(method, path, type, body, r);
        problems.addAll(found);
        if (found.isEmpty() && r.statusCode() < 300) {
            succeeded.add(method + " " + contract.template(URI.create(path).getPath()));
        }
    }

    private static HttpResponse<byte[]> send(String method, String path, String type, byte[] body, String bearer) throws Exception {
        var b = HttpRequest.newBuilder(URI.create(daemon.baseUrl() + path)).timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        if (type != null) {
            b.header("Content-Type", type);
        }
        if (bearer != null) {
            b.header("Authorization", "Bearer " + bearer);
        }
        return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static JsonNode json(HttpResponse<byte[]> r) throws Exception {
        return Api.JSON.readTree(r.body());
    }
}
