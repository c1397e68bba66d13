package io.vivarium.itests.e2e;

import static io.vivarium.itests.e2e.Api.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Another tenant's sandboxes, VMs, snapshots and volumes do not exist for a tenant: every route that names
 * one answers another tenant's admin 404 (never 403, never a success) and does nothing to it. The
 * routes are read from docs/openapi.json (each path with {@code {id}}, and the snapshot routes
 * with {@code {tag}}), so a route is tried as soon as it is documented; one that takes a body this
 * test has no sample of fails it until one is added. Each answer goes through the contract too.
 * Then the owner sees its sandbox as it was: running, its files, no baseline, no checkpoint or
 * snapshot more or less.
 */
class CrossTenantIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final String SECRET = "acme's own\n";
    private static final String TAG = "acme-tag";
    private static final String TAG_HOLE = "OWNERS-TAG";
    /** The id of the owner's command in the routes that name one: set before they are tried. */
    private static String command = "cmd-000000000000";
    /** The body each operation that takes one is tried with; {@value #TAG_HOLE} becomes the owner's checkpoint or snapshot. */
    private static final Map<String, String> BODIES = Map.ofEntries(
            Map.entry("POST /v1/sandboxes/{id}/exec", "{\"args\": [\"touch\", \"/work/pwned\"]}"),
            Map.entry("POST /v1/sandboxes/{id}/exec/stream", "{\"args\": [\"touch\", \"/work/pwned\"]}"),
            Map.entry("POST /v1/sandboxes/{id}/commands", "{\"args\": [\"touch\", \"/work/pwned\"]}"),
            Map.entry("POST /v1/sandboxes/{id}/commands/{cid}/signal", "{\"signal\": 9}"),
            Map.entry("POST /v1/sandboxes/{id}/commands/{cid}/resize", "{\"rows\": 1, \"cols\": 1}"),
            Map.entry("POST /v1/sandboxes/{id}/eval", "{\"code\": \"open('/work/pwned', 'w').close()\"}"),
            Map.entry("POST /v1/sandboxes/{id}/baseline", "{\"paths\": [\"/work\"]}"),
            Map.entry("POST /v1/sandboxes/{id}/changes", "{}"),
            Map.entry("POST /v1/sandboxes/{id}/dry-run", "{\"command\": \"touch /work/pwned\", \"paths\": [\"/work\"]}"),
            Map.entry("POST /v1/sandboxes/{id}/checkpoints", "{\"tag\": \"globex-cp\"}"),
            Map.entry("POST /v1/sandboxes/{id}/branch", "{\"tag\": \"globex-branch\"}"),
            Map.entry("POST /v1/vms/{id}/snapshot", "{\"tag\": \"globex-cp\"}"),
            Map.entry("POST /v1/vms/{id}/restore", "{\"tag\": \"" + TAG_HOLE + "\"}"),
            Map.entry("POST /v1/snapshots/{tag}/compact", "{\"to\": \"globex-flat\"}"),
            Map.entry("POST /v1/sandboxes/{id}/ports", "{\"port\": 8000}"));
    private static final Map<String, String> QUERIES = Map.of("path", "/work/secret");

    @TempDir
    static Path dir;
    static Api owner;
    static Api other;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Path tokens = Files.writeString(dir.resolve("tokens.txt"),
                "acme-admin acme admin\nglobex-admin globex admin\nthe-operator default operator\n");
        Daemon daemon = daemons.start(dir.resolve("state"),
                List.of("--token-file", tokens.toString(), "--features", "core,api-v1,procbox,qemu,fingerprint-sha256,storage-reflink"),
                List.of("-Dvivarium.default.backend=procbox"));
        owner = new Api(daemon.baseUrl(), "acme-admin");
        other = owner.as("globex-admin");
    }

    @Test
    void everyRouteOfAnotherTenantsSandboxAndSnapshotIs404() throws Exception {
        String id = owner.createSandbox();
        owner.sendBytes("PUT", "/v1/sandboxes/" + id + "/files?path=/work/secret", SECRET.getBytes(StandardCharsets.UTF_8));
        expect(201, owner.post("/v1/snapshots", Map.of("tag", TAG, "boot_wait_secs", 0)));
        command = expect(201, owner.post("/v1/sandboxes/" + id + "/commands", Map.of("args", List.of("sleep", "20"))))
                .get("id").asText();

        List<String> tried = tryEvery(op -> op.contains(" /v1/sandboxes/{id}"), id, TAG);
        tried.addAll(tryEvery(op -> op.contains(" /v1/snapshots/{tag}"), id, TAG));
        assertRefused(other.post("/v1/sandboxes", Map.of("snapshot_tag", TAG)), "a fork of another tenant's snapshot");
        assertTrue(tried.containsAll(List.of("POST /v1/sandboxes/{id}/ping", "POST /v1/sandboxes/{id}/pause",
                "POST /v1/sandboxes/{id}/branch", "DELETE /v1/snapshots/{tag}")), "read from the document: " + tried);

        assertEquals("running", expect(200, owner.get("/v1/sandboxes/" + id)).get("status").asText());
        assertUntouched(id);
        Api.Response changes = owner.post("/v1/sandboxes/" + id + "/changes", null);
        assertEquals(404, changes.status(), changes.raw().body());
        assertTrue(changes.error().contains("has no baseline"), "no baseline was taken: " + changes.error());
        assertEquals(List.of(TAG), expect(200, owner.get("/v1/snapshots")).findValuesAsText("tag"), "no snapshot more or less");
        expect(200, owner.get("/v1/snapshots/" + TAG + "/info"));
        assertTrue(expect(200, other.get("/v1/snapshots")).isEmpty(), "the other tenant made no snapshot");
        assertTrue(expect(200, other.get("/v1/sandboxes")).isEmpty(), "and no sandbox");
    }

    @Test
    void everyRouteOfAnotherTenantsVmIs404() throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        String id = expect(201, owner.post("/v1/vms", Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1)))
                .get("id").asText();
        owner.sendBytes("PUT", "/v1/sandboxes/" + id + "/files?path=/work/secret", SECRET.getBytes(StandardCharsets.UTF_8));
        expect(201, owner.post("/v1/vms/" + id + "/snapshot", Map.of("tag", TAG)));

        List<String> tried = tryEvery(op -> op.contains(" /v1/sandboxes/{id}") || op.contains(" /v1/vms/{id}"), id, TAG);
        assertTrue(tried.containsAll(List.of("POST /v1/sandboxes/{id}/resume", "POST /v1/vms/{id}/stop",
                "POST /v1/vms/{id}/start", "POST /v1/vms/{id}/snapshot", "GET /v1/vms/{id}/checkpoints")),
                "read from the document: " + tried);

        assertEquals("running", expect(200, owner.get("/v1/vms/" + id)).get("status").asText(), "not stopped, not paused");
        assertUntouched(id);
        assertEquals(List.of(TAG), expect(200, owner.get("/v1/vms/" + id + "/checkpoints")).findValuesAsText("tag"),
                "no checkpoint more or less");
        assertTrue(expect(200, other.get("/v1/vms")).isEmpty(), "the other tenant sees no VM");
        expect(204, owner.delete("/v1/vms/" + id));
    }

    @Test
    void everyRouteOfAnotherTenantsVolumeIs404AndItsNameIsFreeForTheOther() throws Exception {
        String volume = "acme-data";
        long made = expect(201, owner.post("/v1/volumes", Map.of("name", volume, "size_mib", 16)))
                .get("created_at_unix").asLong();

        List<String> tried = tryEvery(op -> op.contains(" /v1/volumes/{name}"), "no-sandbox", volume);
        assertTrue(tried.containsAll(List.of("GET /v1/volumes/{name}", "DELETE /v1/volumes/{name}")),
                "read from the document: " + tried);
        assertRefused(other.post("/v1/sandboxes", Map.of("volumes", List.of(Map.of("name", volume, "mount_path", "/data")))),
                "a sandbox that mounts another tenant's volume");
        assertTrue(expect(200, other.get("/v1/volumes")).isEmpty(), "the other tenant sees no volume");

        // the same name is another volume for the other tenant
        expect(201, other.post("/v1/volumes", Map.of("name", volume, "size_mib", 16)));
        expect(204, other.delete("/v1/volumes/" + volume));
        JsonNode kept = expect(200, owner.get("/v1/volumes/" + volume));
        assertEquals(made, kept.get("created_at_unix").asLong(), "the owner's volume is the one it made: " + kept);
        expect(204, owner.delete("/v1/volumes/" + volume));
    }

    /**
     * Sends every documented operation {@code which} accepts as the other tenant, with {@code id}
     * and {@code tag} in its path, deletes last (a delete let through would turn what follows into
     * 404s that prove nothing); each must be 404. Returns the operations tried.
     */
    private static List<String> tryEvery(Predicate<String> which, String id, String tag) throws Exception {
        OpenApiContract contract = OpenApiContract.docs();
        // a HEAD's answer has no body to say why: its GET is tried
        List<String> ops = new ArrayList<>(contract.operations().stream().filter(which).filter(op -> !op.startsWith("HEAD ")).toList());
        ops.sort(Comparator.comparing((String op) -> op.startsWith("DELETE ")).thenComparing(Comparator.naturalOrder()));
        for (String op : ops) {
            String[] mt = op.split(" ", 2);
            String path = mt[1].replace("{id}", id).replace("{tag}", tag).replace("{cid}", command)
                    .replace("{port}", "8000").replace("{path}", "index.html").replace("{name}", tag) + query(contract.requiredQueryParameters(op));
            List<String> types = contract.requestTypes(op);
            Api.Response r;
            if (types.contains("application/json")) {
                String body = BODIES.get(op);
                if (body == null && contract.requiresBody(op)) {
                    fail(op + " takes a body: add a sample of it to CrossTenantIT.BODIES");
                }
                r = other.send(mt[0], path, body == null ? null : body.replace(TAG_HOLE, tag));
            } else if (!types.isEmpty()) {
                r = other.sendBytes(mt[0], path, "another tenant's bytes".getBytes(StandardCharsets.UTF_8));
            } else {
                r = other.send(mt[0], path, null);
            }
            assertRefused(r, op + " as " + path);
        }
        return ops;
    }

    private static String query(List<String> required) {
        StringBuilder q = new StringBuilder();
        for (String name : required) {
            String value = QUERIES.get(name);
            assertNotNull(value, "a required query parameter without a sample: add " + name + " to CrossTenantIT.QUERIES");
            q.append(q.isEmpty() ? "?" : "&").append(name).append('=').append(value);
        }
        return q.toString();
    }

    private static void assertRefused(Api.Response r, String what) {
        assertEquals(404, r.status(), what + ": another tenant's is 404, not " + r.status() + " " + r.raw().body());
        assertNotNull(r.error(), what);
    }

    /** The owner's file is as it wrote it, and nothing the other tenant's commands would have made is there. */
    private static void assertUntouched(String id) throws Exception {
        assertEquals(SECRET, Api.sh(owner, id, "cat /work/secret"));
        assertEquals("absent\n", Api.sh(owner, id, "test -e /work/pwned && echo present || echo absent"));
    }
}
