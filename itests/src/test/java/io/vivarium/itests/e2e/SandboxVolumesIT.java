package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Named volumes on a real daemon (docs/volumes.md): an ext4 file system per volume, loop-mounted
 * on the host and bound into procbox and gVisor sandboxes, or a disk of a QEMU VM that takes it
 * alone and freezes it before it is deleted. Files written just before a delete are
 * complete in the next sandbox; one writer at a time; a full volume is ENOSPC inside; a link a
 * sandbox leaves in a volume never leads a later mount out of it; a {@code kill -9} of the daemon
 * keeps mounts and reservations; what a dry-run or a branch could not put back is a 409.
 */
class SandboxVolumesIT {
    private static final String FEATURES = "core,api-v1,procbox,gvisor,fingerprint-sha256,storage-reflink";
    private static final AtomicInteger NAMES = new AtomicInteger();

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api api;
    static boolean gvisor;
    static boolean qemu;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/mkfs.ext4")) || Files.isExecutable(Path.of("/sbin/mkfs.ext4")),
                "volumes are ext4 file systems: needs mkfs.ext4 (apt-get install e2fsprogs)");
        gvisor = Host.gvisorMissing() == null;
        qemu = Host.qemuMissing("default") == null;
        String features = FEATURES + (qemu ? ",qemu" : "");
        daemon = daemons.start(dir.resolve("state"), gvisor || qemu ? List.of("--features", features) : List.of());
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    @AfterEach
    void deleteSandboxes() throws Exception {
        api.deleteAllSandboxes();
    }

    private static String newVolume(int sizeMib) throws Exception {
        String name = "vol-" + NAMES.incrementAndGet();
        JsonNode made = Api.expect(201, api.post("/v1/volumes", Map.of("name", name, "size_mib", sizeMib)));
        assertEquals(name, made.get("name").asText());
        assertEquals(sizeMib, made.get("size_mib").asInt());
        assertEquals(0, made.get("attachments").size(), made.toString());
        return name;
    }

    private static Map<String, Object> mount(String name, String path, String subPath, boolean readOnly) {
        Map<String, Object> m = new HashMap<>(Map.of("name", name, "mount_path", path, "read_only", readOnly));
        if (subPath != null) {
            m.put("sub_path", subPath);
        }
        return m;
    }

    @SafeVarargs
    private static Api.Response create(String backend, Map<String, Object>... mounts) throws Exception {
        return api.post("/v1/sandboxes", Map.of("backend", backend, "volumes", List.of(mounts)));
    }

    @SafeVarargs
    private static String created(String backend, Map<String, Object>... mounts) throws Exception {
        return Api.expect(201, create(backend, mounts)).get("id").asText();
    }

    private static JsonNode sh(String id, String script) throws Exception {
        return api.exec(id, "sh", "-c", script);
    }

    @Test
    void filesWrittenJustBeforeADeleteAreCompleteInTheNextSandboxThatMountsTheVolume() throws Exception {
        String data = newVolume(64);
        String logs = newVolume(32);
        String writer = created("procbox", mount(data, "/data", "proj/a", false), mount(logs, "/work/logs", null, false));
        JsonNode info = api.get("/v1/sandboxes/" + writer).body();
        assertEquals(2, info.get("volumes").size(), info.toString());
        assertEquals("proj/a", info.get("volumes").get(0).get("sub_path").asText(), info.toString());
        JsonNode who = sh(writer, "id -u; head -c 4000000 /dev/urandom > /data/blob; sha256sum < /data/blob | cut -d' ' -f1;"
                + " echo line > /work/logs/app.log");
        assertEquals(0, who.get("exit_code").asInt(), who.toString());
        String[] out = who.get("stdout").asText().split("\n");
        assertNotEquals("0", out[0], "the sandbox's commands run as a user other than root, and still write the volume");
        JsonNode attached = api.get("/v1/volumes/" + data).body();
        assertEquals(writer, attached.get("attachments").get(0).get("sandbox_id").asText(), attached.toString());
        assertEquals(409, api.delete("/v1/volumes/" + data).status(), "a volume in use is not deleted");
        assertTrue(api.delete("/v1/volumes/" + data).body().get("error").asText().contains(writer),
                "the refusal names the sandbox that mounts it");

        // no sync: the delete itself must leave the file system whole
        Api.expect(204, api.delete("/v1/sandboxes/" + writer));
        assertEquals(0, api.get("/v1/volumes/" + data).body().get("attachments").size());

        String reader = created("procbox", mount(data, "/in", null, true), mount(logs, "/logs", null, true));
        JsonNode read = sh(reader, "sha256sum < /in/proj/a/blob | cut -d' ' -f1; cat /logs/app.log;"
                + " touch /in/x 2>&1 || echo refused");
        String[] lines = read.get("stdout").asText().split("\n");
        assertEquals(List.of(out[1], "line"), List.of(lines[0], lines[1]), read.toString());
        assertTrue(read.get("stdout").asText().contains("Read-only file system\nrefused"),
                "a read-only mount refuses writes: " + read);

        Api.expect(204, api.delete("/v1/sandboxes/" + reader));
        try (var left = Files.list(dir.resolve("state").resolve("volume-binds"))) {
            assertEquals(List.of(), left.toList(), "a deleted sandbox leaves no bind behind");
        }
        Api.expect(204, api.delete("/v1/volumes/" + data));
        assertEquals(404, api.get("/v1/volumes/" + data).status());
        assertFalse(api.get("/v1/volumes").body().toString().contains("\"" + data + "\""), "deleted volumes are not listed");
    }

    @Test
    void aVolumeHasOneWriterAtATimeAndAnyNumberOfReaders() throws Exception {
        String v = newVolume(16);
        String writer = created("procbox", mount(v, "/v", null, false));
        Api.Response second = create("procbox", mount(v, "/v", null, false));
        assertEquals(409, second.status(), second.raw().body());
        assertTrue(second.body().get("error").asText().contains(writer), second.raw().body());
        String r1 = created("procbox", mount(v, "/v", null, true));
        String r2 = created("procbox", mount(v, "/v", null, true));
        sh(writer, "echo shared > /v/f");
        assertEquals("shared\n", sh(r2, "cat /v/f").get("stdout").asText(), "readers see the writer's files");
        JsonNode attachments = api.get("/v1/volumes/" + v).body().get("attachments");
        assertEquals(3, attachments.size(), attachments.toString());
        assertEquals(writer, attachments.get(0).get("sandbox_id").asText(), "the writer first: " + attachments);
        assertFalse(attachments.get(0).get("read_only").asBoolean());
        List<String> readers = new ArrayList<>();
        attachments.forEach(a -> {
            if (a.get("read_only").asBoolean()) {
                readers.add(a.get("sandbox_id").asText());
            }
        });
        assertEquals(List.of(r1, r2).stream().sorted().toList(), readers);

        Api.expect(204, api.delete("/v1/sandboxes/" + writer));
        String next = created("procbox", mount(v, "/v", null, false));
        assertEquals("shared\n", sh(next, "cat /v/f").get("stdout").asText(), "once the writer is gone another may write");
    }

    @Test
    void aFullVolumeIsEnospcInsideAndTheDaemonGoesOn() throws Exception {
        String v = newVolume(16);
        String id = created("procbox", mount(v, "/v", null, false));
        JsonNode full = sh(id, "dd if=/dev/zero of=/v/big bs=1M count=64 2>&1; echo status $?");
        assertTrue(full.get("stdout").asText().contains("No space left on device"), full.toString());
        assertFalse(full.get("stdout").asText().contains("status 0"), full.toString());
        assertEquals(200, api.get("/healthz").status());
        assertEquals("ok\n", sh(id, "rm /v/big && echo ok").get("stdout").asText(), "the sandbox goes on too");
    }

    @Test
    void badVolumesAreRefusedWithWhatToFix() throws Exception {
        String v = newVolume(16);
        Map<Object, Integer> bodies = new java.util.LinkedHashMap<>();
        bodies.put(Map.of("name", "Bad Name", "size_mib", 16), 400);
        bodies.put(Map.of("name", "../x", "size_mib", 16), 400);
        bodies.put(Map.of("name", "ok-size", "size_mib", 1), 400);
        bodies.put(Map.of("name", "no-size"), 400);
        for (var e : bodies.entrySet()) {
            Api.Response r = api.outsideTheContract().post("/v1/volumes", e.getKey());
            assertEquals(e.getValue(), r.status(), e.getKey() + " " + r.raw().body());
            assertFalse(r.body().get("error").asText().isBlank());
        }
        assertEquals(409, api.post("/v1/volumes", Map.of("name", v, "size_mib", 16)).status(), "a name taken");
        for (Map<String, Object> m : List.of(mount(v, "/", null, false), mount(v, "/etc/app", null, false),
                mount(v, "relative", null, false), mount(v, "/a/../b", null, false), mount(v, "/data/", null, false),
                mount(v, "/proc", null, true), mount(v, "/d", "../up", false), mount(v, "/d", "/abs", false),
                mount(v, "/d", "a//b", false))) {
            Api.Response r = create("procbox", m);
            assertEquals(400, r.status(), m + " " + r.raw().body());
        }
        assertEquals(400, create("procbox", mount(v, "/a", null, true), mount(v, "/b", null, true)).status(),
                "a volume named twice");
        assertEquals(400, create("procbox", mount(v, "/a", null, true), mount(newVolume(16), "/a/b", null, true)).status(),
                "a mount inside another");
        Api.Response unknown = create("procbox", mount("no-such-volume", "/a", null, false));
        assertEquals(404, unknown.status(), unknown.raw().body());
        Api.Response fork = api.post("/v1/sandboxes", Map.of("snapshot_tag", "any", "volumes", List.of(mount(v, "/a", null, false))));
        assertEquals(400, fork.status(), fork.raw().body());
        assertEquals(0, api.get("/v1/sandboxes").body().size(), "nothing was created");
        assertEquals(0, api.get("/v1/volumes/" + v).body().get("attachments").size(), "nor reserved");
    }

    @Test
    void aLinkASandboxLeavesInTheVolumeNeverLeadsALaterMountOutOfIt() throws Exception {
        String v = newVolume(16);
        String first = created("procbox", mount(v, "/v", null, false));
        sh(first, "ln -s /etc /v/escape && mkdir -p /v/dir && ln -s /etc /v/dir/inner");
        Api.expect(204, api.delete("/v1/sandboxes/" + first));
        for (String sub : List.of("escape", "dir/inner", "escape/ssl")) {
            Api.Response r = create("procbox", mount(v, "/v", sub, false));
            assertEquals(409, r.status(), sub + ": " + r.raw().body());
            assertTrue(r.body().get("error").asText().contains("not a directory"), r.raw().body());
        }
        assertEquals(0, api.get("/v1/volumes/" + v).body().get("attachments").size(), "the refused creates reserved nothing");
    }

    @Test
    void aSandboxThatMountsAVolumeWritableRefusesWhatCouldNotPutItBack() throws Exception {
        String v = newVolume(16);
        String writer = created("procbox", mount(v, "/v", null, false));
        Api.Response dryRun = api.post("/v1/sandboxes/" + writer + "/dry-run", Map.of("command", "rm -f /v/f", "paths", List.of("/work")));
        assertEquals(409, dryRun.status(), dryRun.raw().body());
        assertTrue(dryRun.body().get("error").asText().contains("read_only"), dryRun.raw().body());
        Api.Response branch = api.post("/v1/sandboxes/" + writer + "/branch", Map.of("tag", "with-volume"));
        assertEquals(409, branch.status(), branch.raw().body());
        sh(writer, "echo kept > /v/f");

        String reader = created("procbox", mount(v, "/v", null, true));
        JsonNode run = Api.expect(200, api.post("/v1/sandboxes/" + reader + "/dry-run",
                Map.of("command", "cat /v/f > /work/copied", "paths", List.of("/work"))));
        assertEquals(0, run.get("exit_code").asInt(), run.toString());
        assertTrue(run.toString().contains("copied"), "the dry-run's twin reads the read-only volume too: " + run);
    }

    @Test
    void aKill9OfTheDaemonKeepsMountsAndReservations() throws Exception {
        Path state = dir.resolve("restart-state");
        Daemon first = daemons.start(state, List.of());
        Api a = new Api(first.baseUrl(), first.adminToken());
        Api.expect(201, a.post("/v1/volumes", Map.of("name", "kept", "size_mib", 16)));
        String id = Api.expect(201, a.post("/v1/sandboxes", Map.of("volumes", List.of(mount("kept", "/v", null, false)))))
                .get("id").asText();
        a.exec(id, "sh", "-c", "echo before > /v/f");
        first.kill9();

        Daemon second = daemons.start(state, List.of());
        Api b = new Api(second.baseUrl(), second.adminToken());
        assertEquals("before\n", Api.sh(b, id, "cat /v/f"), "the sandbox still has its volume");
        Api.sh(b, id, "echo after >> /v/f");
        Api.Response writer = b.post("/v1/sandboxes", Map.of("volumes", List.of(mount("kept", "/v", null, false))));
        assertEquals(409, writer.status(), "the reservation survived the restart: " + writer.raw().body());
        Api.expect(204, b.delete("/v1/sandboxes/" + id));
        String next = Api.expect(201, b.post("/v1/sandboxes", Map.of("volumes", List.of(mount("kept", "/v", null, true)))))
                .get("id").asText();
        assertEquals("before\nafter\n", Api.sh(b, next, "cat /v/f"));
        Api.expect(204, b.delete("/v1/sandboxes/" + next));
        Api.expect(204, b.delete("/v1/volumes/kept"));
    }

    @Test
    void theSameVolumeWorksInGvisorAndProcboxSandboxes() throws Exception {
        Assumptions.assumeTrue(gvisor, Host.gvisorMissing());
        String v = newVolume(32);
        String procbox = created("procbox", mount(v, "/v", "shared", false));
        sh(procbox, "echo from-procbox > /v/p");
        Api.expect(204, api.delete("/v1/sandboxes/" + procbox));

        String container = created("gvisor", mount(v, "/v", "shared", false));
        assertEquals("from-procbox\n", sh(container, "cat /v/p").get("stdout").asText());
        sh(container, "echo from-gvisor > /v/g");
        Api.expect(204, api.delete("/v1/sandboxes/" + container));

        String reader = created("gvisor", mount(v, "/ro", null, true));
        JsonNode w = sh(reader, "cat /ro/shared/g; touch /ro/x 2>&1 || echo refused");
        assertTrue(w.get("stdout").asText().startsWith("from-gvisor\n") && w.get("stdout").asText().contains("refused"),
                w.toString());
        Api.expect(204, api.delete("/v1/sandboxes/" + reader));

        String again = created("procbox", mount(v, "/v", "shared", true));
        assertEquals("from-gvisor\n", sh(again, "cat /v/g").get("stdout").asText());
    }

    @Test
    void aVmTakesItsVolumesAsDisksAndWhatItWroteJustBeforeItsDeleteIsInTheNextSandbox() throws Exception {
        Assumptions.assumeTrue(qemu, Host.qemuMissing("default"));
        String data = newVolume(64);
        String logs = newVolume(32);
        String vm = created("qemu", mount(data, "/data", "proj/b", false), mount(logs, "/work/logs", null, false));
        // a user other than root in the guest writes both; nothing syncs
        JsonNode wrote = sh(vm, "echo 'worker:x:1000:1000::/tmp:/bin/sh' >> /etc/passwd && su worker -s /bin/sh -c '"
                + "head -c 4000000 /dev/urandom > /data/blob && sha256sum < /data/blob | cut -d\" \" -f1"
                + " && echo line > /work/logs/app.log && stat -c %u /data/blob'");
        assertEquals(0, wrote.get("exit_code").asInt(), wrote.toString());
        String[] out = wrote.get("stdout").asText().split("\n");
        assertEquals("1000", out[1], "written by uid 1000: " + wrote);

        Api.Response beside = create("procbox", mount(data, "/in", null, true));
        assertEquals(409, beside.status(), "a VM has its volume alone, even beside a reader: " + beside.raw().body());
        assertTrue(beside.body().get("error").asText().contains(vm), beside.raw().body());
        assertEquals(vm, api.get("/v1/volumes/" + data).body().get("attachments").get(0).get("sandbox_id").asText());

        Api.expect(204, api.delete("/v1/sandboxes/" + vm));
        assertEquals(0, api.get("/v1/volumes/" + data).body().get("attachments").size());
        String reader = created("procbox", mount(data, "/in", null, true), mount(logs, "/logs", null, true));
        JsonNode read = sh(reader, "sha256sum < /in/proj/b/blob | cut -d' ' -f1; cat /logs/app.log");
        assertEquals(out[0] + "\nline\n", read.get("stdout").asText(), read.toString());
        Api.expect(204, api.delete("/v1/sandboxes/" + reader));

        String again = created("qemu", mount(data, "/d", "proj/b", true));
        assertEquals(out[0] + "\n", sh(again, "sha256sum < /d/blob | cut -d' ' -f1").get("stdout").asText(),
                "a read-only disk of another VM reads the same");
        JsonNode refused = sh(again, "touch /d/x 2>&1 || echo refused");
        assertTrue(refused.get("stdout").asText().contains("refused"), refused.toString());
    }

    @Test
    void aFreezeThatFailsHalfwayThawsWhatItFrozeAndTheVmKeepsRunningWithItsVolumes() throws Exception {
        Assumptions.assumeTrue(qemu, Host.qemuMissing("default"));
        String a = newVolume(32);
        String b = newVolume(32);
        String vm = created("qemu", mount(a, "/a", null, false), mount(b, "/b", null, false));
        // the second volume frozen by someone in the guest: the delete's freeze of both fails on it
        JsonNode frozen = sh(vm, "echo before > /a/f && fsfreeze --freeze /run/vivarium/volumes/1 && echo frozen");
        assertEquals("frozen\n", frozen.get("stdout").asText(), frozen.toString());

        Api.Response refused = api.delete("/v1/sandboxes/" + vm);
        assertEquals(409, refused.status(), refused.raw().body());
        assertTrue(refused.body().get("error").asText().contains("cannot freeze"), refused.raw().body());
        assertEquals("running", api.get("/v1/sandboxes/" + vm).body().get("status").asText());
        assertEquals(vm, api.get("/v1/volumes/" + a).body().get("attachments").get(0).get("sandbox_id").asText(),
                "the volumes stay reserved");
        // the first volume was thawed again: a write to it does not hang
        JsonNode after = api.post("/v1/sandboxes/" + vm + "/exec", Map.of("args", List.of("sh", "-c",
                "echo after >> /a/f && cat /a/f"), "timeout_secs", 10)).body();
        assertEquals("before\nafter\n", after.get("stdout").asText(), after.toString());

        sh(vm, "fsfreeze --unfreeze /run/vivarium/volumes/1 && echo b > /b/g");
        Api.expect(204, api.delete("/v1/sandboxes/" + vm));
        String reader = created("procbox", mount(a, "/a", null, true), mount(b, "/b", null, true));
        assertEquals("before\nafter\nb\n", sh(reader, "cat /a/f /b/g").get("stdout").asText());
    }

    @Test
    void aVmWhoseFreezeFailsIsDeletedWithForceAndItsVolumeMountsCleanAfter() throws Exception {
        Assumptions.assumeTrue(qemu, Host.qemuMissing("default"));
        String v = newVolume(32);
        String vm = created("qemu", mount(v, "/v", null, false));
        sh(vm, "echo kept > /v/f && sync && fsfreeze --freeze /run/vivarium/volumes/0");
        assertEquals(409, api.delete("/v1/sandboxes/" + vm).status(), "its only volume cannot be frozen again");
        // the escape: stop it now, without the freeze (what the guest had not written back is lost)
        Api.expect(204, api.delete("/v1/sandboxes/" + vm + "?force=true"));
        assertEquals(0, api.get("/v1/volumes/" + v).body().get("attachments").size(), "the volume is released");
        String reader = created("procbox", mount(v, "/v", null, false));
        assertEquals("kept\n", sh(reader, "cat /v/f").get("stdout").asText(), "what was synced is there, the file system whole");
    }
}
