package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The qemu feature end to end, on one VM (a boot under TCG takes seconds): create, exec, files,
 * baseline and changes, then a daemon restart and a bundle update, both re-adopting the VM with a
 * background process inside still running, then delete.
 */
class QemuIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features", "core,api-v1,procbox,qemu,fingerprint-sha256");
    private static final String QEMU_BUNDLE = "io.vivarium.backend-qemu";

    @TempDir
    Path state;

    @BeforeAll
    static void needsQemuAndTheDefaultImage() {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
    }

    @Test
    void aVmLivesThroughCreateExecFilesChangesARestartAndABundleUpdateUntilDeleted() throws Exception {
        Daemon first = daemons.start(state, FEATURES);
        Api api = new Api(first.baseUrl(), first.adminToken());

        JsonNode qemu = backend(api);
        assertTrue(qemu != null && qemu.get("available").asBoolean(), qemu.toString());
        assertTrue(qemu.get("details").get("accelerator").asText().matches("(tcg|kvm) \\(.+\\)"), qemu.toString());

        String id = api.createSandbox(Map.of("backend", "qemu", "memory_limit_mib", 256, "vcpus", 1));
        JsonNode info = api.get("/v1/sandboxes/" + id).body();
        assertEquals("running", info.get("status").asText(), info.toString());
        long qemuPid = info.get("pid").asLong();
        assertTrue(HostProcesses.cmdline(qemuPid).startsWith("/usr/bin/qemu-system-x86_64 "), HostProcesses.cmdline(qemuPid));
        assertTrue(HostProcesses.cmdline(qemuPid).contains(" -nic none "), "no network: " + HostProcesses.cmdline(qemuPid));

        assertEquals("vivarium\n", Api.sh(api, id, "hostname"), "commands run in the guest");
        assertEquals(204, api.sendBytes("PUT", "/v1/sandboxes/" + id + "/files?path=/work/in.txt", "from the host\n".getBytes()).status());
        assertEquals("from the host\n", Api.sh(api, id, "cat /work/in.txt"));
        Api.sh(api, id, "echo from the guest > /work/out.txt");
        assertEquals("from the guest\n", readFile(first, id, "/work/out.txt"));

        Api.sh(api, id, "mkdir -p /work/src && echo 1 > /work/src/a && echo 2 > /work/src/b");
        JsonNode base = ok(api.post("/v1/sandboxes/" + id + "/baseline", Map.of("paths", List.of("/work/src"))));
        assertEquals(2, base.get("files").asInt(), base.toString());
        Api.sh(api, id, "echo changed > /work/src/a && rm /work/src/b && echo new > /work/src/c");
        JsonNode changes = ok(api.post("/v1/sandboxes/" + id + "/changes", ""));
        assertEquals("[\"/work/src/c\"]", changes.get("added").toString(), changes.toString());
        assertEquals("[\"/work/src/a\"]", changes.get("modified").toString(), changes.toString());
        assertEquals("[\"/work/src/b\"]", changes.get("deleted").toString(), changes.toString());

        String bg = Api.sh(api, id, "sleep 100000 >/dev/null 2>&1 </dev/null & echo $!").strip();
        assertEquals(0, first.stop(), "SIGTERM stops the daemon cleanly");
        assertTrue(HostProcesses.cmdline(qemuPid).startsWith("/usr/bin/qemu-system-x86_64 "), "the VM outlives the daemon");

        Daemon second = daemons.start(state, FEATURES);
        api = new Api(second.baseUrl(), second.adminToken());
        assertEquals("running", api.get("/v1/sandboxes/" + id).body().get("status").asText());
        assertEquals("alive\n", Api.sh(api, id, "kill -0 " + bg + " && echo alive"), "the background process survives a restart");
        assertEquals("from the guest\n", Api.sh(api, id, "cat /work/out.txt"));

        byte[] update = BundleJars.withVersion(BundleJars.shipped("backend-qemu"), "0.1.0.update1");
        Api.Response updated = api.sendBytes("PUT", "/v1/plugins/" + QEMU_BUNDLE, update);
        assertEquals(200, updated.status(), updated.raw().body());
        awaitVersion(api, "0.1.0.update1");
        assertEquals("alive\n", Api.sh(api, id, "kill -0 " + bg + " && echo alive"),
                "the background process survives a bundle update");
        assertEquals(qemuPid, api.get("/v1/sandboxes/" + id).body().get("pid").asLong(), "the same QEMU");

        Path dir = second.stateDir().resolve("sandboxes").resolve(id);
        assertTrue(Files.exists(dir.resolve("disk.qcow2")));
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
        assertEquals("", HostProcesses.cmdline(qemuPid), "delete ends QEMU");
        assertFalse(Files.exists(dir), "delete removes the VM's files");
    }

    @Test
    void anImageThatIsNotThereIsA400ThatSaysHowToBuildIt() throws Exception {
        Daemon daemon = daemons.start(state, FEATURES);
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        Api.Response r = api.post("/v1/sandboxes", Map.of("backend", "qemu", "image", "no-such-image"));
        assertEquals(400, r.status(), r.raw().body());
        assertTrue(r.body().get("error").asText().contains("build-image.sh"), r.raw().body());
        // refused by the backend (501), or by core before it when the capabilities say so (400)
        Api.Response limits = api.post("/v1/sandboxes", Map.of("backend", "qemu", "pids_limit", 64));
        assertTrue(limits.status() == 400 || limits.status() == 501, limits.raw().body());
        assertTrue(limits.body().get("error").asText().matches("pids_limit is not supported by (backend )?qemu.*"),
                limits.raw().body());
    }

    private static JsonNode ok(Api.Response r) {
        assertEquals(200, r.status(), r.raw().body());
        return r.body();
    }

    private static JsonNode backend(Api api) throws Exception {
        for (JsonNode b : api.get("/v1/backends").body()) {
            if (b.get("name").asText().equals("qemu")) {
                return b;
            }
        }
        return null;
    }

    private static void awaitVersion(Api api, String version) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        JsonNode b = backend(api);
        while (b == null || !version.equals(b.get("version").asText())) {
            assertTrue(System.nanoTime() < deadline, "qemu " + version + " is not listed within 30 s: " + b);
            Thread.sleep(50);
            b = backend(api);
        }
    }

    private static String readFile(Daemon daemon, String id, String path) throws Exception {
        HttpResponse<byte[]> r = new Api(daemon.baseUrl(), daemon.adminToken())
                .raw("GET", "/v1/sandboxes/" + id + "/files?path=" + path, null);
        String content = new String(r.body(), StandardCharsets.UTF_8);
        assertEquals(200, r.statusCode(), content);
        return content;
    }
}
