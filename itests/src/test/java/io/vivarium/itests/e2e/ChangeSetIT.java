package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The seed's "Sandbox file change-set" document, replayed against a process sandbox. */
class ChangeSetIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api admin;
    static Api user;
    static Api otherTenant;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Path tokens = Files.writeString(dir.resolve("tokens"), "adm acme admin\nusr acme user\nglobex globex admin\n");
        daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        admin = new Api(daemon.baseUrl(), "adm");
        user = admin.as("usr");
        otherTenant = admin.as("globex");
    }

    static JsonNode ok(Api.Response r) {
        assertEquals(200, r.status(), r.raw().body());
        return r.body();
    }

    static List<String> strings(JsonNode array) {
        return Api.JSON.convertValue(array, Api.JSON.getTypeFactory().constructCollectionType(List.class, String.class));
    }

    @Test
    void theSeedsExampleFlow() throws Exception {
        String id = admin.createSandbox();
        Api.sh(admin, id, "mkdir -p /work/src /work/home && echo 1 > /work/src/main.py && echo 2 > /work/src/old.py"
                + " && echo 3 > /work/home/notes && echo keep > /work/src/keep.txt");
        JsonNode base = ok(admin.post("/v1/sandboxes/" + id + "/baseline", Map.of("paths", List.of("/work/src", "/work/home/"))));
        assertEquals(true, base.get("ok").asBoolean());
        assertEquals(4, base.get("files").asInt());
        assertEquals("sha256", base.get("mode").asText());
        assertEquals(List.of("/work/home", "/work/src"), strings(base.get("paths")));

        Api.sh(admin, id, "echo changed > /work/src/main.py && rm /work/src/old.py && echo new > '/work/src/out file.txt'");
        JsonNode c = ok(admin.post("/v1/sandboxes/" + id + "/changes", ""));
        assertEquals(List.of("/work/src/out file.txt"), strings(c.get("added")));
        assertEquals(List.of("/work/src/main.py"), strings(c.get("modified")));
        assertEquals(List.of("/work/src/old.py"), strings(c.get("deleted")));
        assertEquals(2, c.get("unchanged").asInt());
        assertEquals("sha256", c.get("mode").asText());
        assertEquals(List.of("/work/home", "/work/src"), strings(c.get("paths")));
        assertTrue(c.get("baseline_taken_at_unix").asLong() > 1_700_000_000L);

        JsonNode narrowed = ok(admin.post("/v1/sandboxes/" + id + "/changes", Map.of("paths", List.of("/work/home"))));
        assertEquals(0, narrowed.get("added").size() + narrowed.get("modified").size() + narrowed.get("deleted").size());
        assertEquals(1, narrowed.get("unchanged").asInt());

        Api.sh(admin, id, "mv /work/home/notes /work/home/renamed");
        JsonNode renamed = ok(admin.post("/v1/sandboxes/" + id + "/changes", Map.of("paths", List.of("/work/home"))));
        assertEquals(List.of("/work/home/renamed"), strings(renamed.get("added")));
        assertEquals(List.of("/work/home/notes"), strings(renamed.get("deleted")));

        Path stored = daemon.stateDir().resolve("sandboxes").resolve(id).resolve("baseline.json");
        assertTrue(Files.exists(stored), "the baseline lives beside the record, outside the workspace");
        assertEquals(204, admin.delete("/v1/sandboxes/" + id).status());
        assertFalse(Files.exists(stored), "and goes away with the sandbox");
    }

    @Test
    void symlinksDirectoriesAndUnreadableFilesAreHandledAsTheSeedSays() throws Exception {
        String id = admin.createSandbox();
        Api.sh(admin, id, "mkdir -p /work/t/emptydir && echo s > /work/t/secret && chmod 000 /work/t/secret"
                + " && ln -s /etc/passwd /work/t/link && ln -s /work/t/secret /work/t/link2 && mkfifo /work/t/fifo");
        JsonNode base = ok(admin.post("/v1/sandboxes/" + id + "/baseline", Map.of("paths", List.of("/work/t"))));
        assertEquals(1, base.get("files").asInt(), "only the regular file is listed");

        Api.sh(admin, id, "echo different > /work/t/secret2; cat /work/t/secret2 > /dev/null; chmod 000 /work/t/secret2"
                + "; rm /work/t/secret2; chmod 200 /work/t/secret && echo rewritten > /work/t/secret && chmod 000 /work/t/secret");
        JsonNode same = ok(admin.post("/v1/sandboxes/" + id + "/changes", ""));
        assertEquals(1, same.get("unchanged").asInt(), "unreadable before and after is unchanged: " + same);

        Api.sh(admin, id, "chmod 644 /work/t/secret");
        JsonNode readable = ok(admin.post("/v1/sandboxes/" + id + "/changes", ""));
        assertEquals(List.of("/work/t/secret"), strings(readable.get("modified")), "becoming readable is a modification");
    }

    @Test
    void everyStatusOfTheSeedsTable() throws Exception {
        String id = admin.createSandbox();
        String baseline = "/v1/sandboxes/" + id + "/baseline";
        String changes = "/v1/sandboxes/" + id + "/changes";
        Api.sh(admin, id, "mkdir -p /work/d/locked && echo x > /work/d/f && echo y > /work/file && chmod 000 /work/d/locked");

        assertError(admin.post(changes, ""), 404, "no baseline");
        assertError(admin.post(baseline, Map.of("paths", List.of("work"))), 400, "absolute");
        assertError(admin.post(baseline, Map.of("paths", List.of("/work/../etc"))), 400, "..");
        assertError(admin.post(baseline, Map.of("paths", List.of("/work/a\u0001b"))), 400, "control");
        assertError(admin.post(baseline, Map.of("paths", List.of("/work/" + "x".repeat(4100)))), 400, "4096");
        assertError(admin.post(baseline, Map.of("paths", java.util.stream.IntStream.range(0, 65).mapToObj(i -> "/work/" + i).toList())), 400, "64");
        assertError(admin.post(baseline, Map.of("paths", List.of("/work/file"))), 400, "not a directory");
        assertError(admin.post(baseline, Map.of("paths", List.of("/work/missing"))), 400, "not a directory");
        assertError(admin.post(baseline, Map.of("paths", List.of("/etc"))), 400, "workspace");
        assertError(admin.post(baseline, Map.of("paths", List.of("/work/d"))), 400, "/work/d/locked");
        assertError(admin.outsideTheContract().post(baseline, Map.of()), 400, "paths");
        assertError(admin.outsideTheContract().post(baseline, Map.of("paths", List.of("/work"), "extra", 1)), 400, "unknown field");
        assertError(user.post(baseline, Map.of("paths", List.of("/work"))), 403, "admin");
        assertError(user.post(changes, ""), 403, "admin");
        assertError(otherTenant.post(baseline, Map.of("paths", List.of("/work"))), 404, "no sandbox");
        assertError(admin.post("/v1/sandboxes/sb-000000000000/baseline", Map.of("paths", List.of("/work"))), 404, "no sandbox");

        Api.sh(admin, id, "chmod 755 /work/d/locked");
        ok(admin.post(baseline, Map.of("paths", List.of("/work/d"))));
        assertError(admin.post(changes, Map.of("paths", List.of("/work"))), 400, "not covered");
        Files.writeString(daemon.stateDir().resolve("sandboxes").resolve(id).resolve("baseline.json"), "{not json");
        assertError(admin.post(changes, ""), 400, "corrupt");
    }

    /**
     * A process in the sandbox keeps swapping a directory for a symlink to a host directory while
     * baselines and changes walk 20,000 files: each answer is an ELOOP error (or an entry that
     * vanished mid-swap) or a listing of the workspace only, never the host files' fingerprint.
     */
    @Test
    void aSymlinkSwappedInDuringTheWalkNeverLeadsItOntoTheHost() throws Exception {
        String marker = "host secret " + UUID.randomUUID();
        Path host = Files.createDirectory(dir.resolve("host-secrets"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        for (int i = 0; i < 100; i++) {
            Files.writeString(host.resolve("f" + i), marker);
        }
        String markerFingerprint = HexFormat.of().formatHex(
                MessageDigest.getInstance("SHA-256").digest(marker.getBytes(StandardCharsets.UTF_8)));
        String id = admin.createSandbox();
        try {
            Api.sh(admin, id, "set -e; mkdir /work/tree /work/swap; cd /work/tree; for d in $(seq 0 19); do mkdir $d;"
                    + " (cd $d && seq 0 999 | xargs touch); done; for i in $(seq 0 99); do echo ws $i > /work/swap/f$i; done");
            Api.sh(admin, id, "cd /work; while :; do mv swap swap.aside; ln -s '" + host + "' swap; rm swap;"
                    + " mv swap.aside swap; done >/dev/null 2>&1 &");
            Path stored = daemon.stateDir().resolve("sandboxes").resolve(id).resolve("baseline.json");
            int eloops = 0;
            int rounds = 0;
            long deadline = System.nanoTime() + 180_000_000_000L;
            while ((eloops == 0 || rounds < 5) && System.nanoTime() < deadline) {
                rounds++;
                Api.Response base = admin.post("/v1/sandboxes/" + id + "/baseline", Map.of("paths", List.of("/work")));
                if (walkFailed(base, host)) {
                    eloops += base.error().contains(ELOOP) ? 1 : 0;
                    continue;
                }
                assertFalse(Files.readString(stored).contains(markerFingerprint), "the baseline fingerprinted a host file");
                Api.Response changes = admin.post("/v1/sandboxes/" + id + "/changes", "");
                if (walkFailed(changes, host)) {
                    eloops += changes.error().contains(ELOOP) ? 1 : 0;
                    continue;
                }
                // files of swap/ may be added or deleted (the walk saw the symlink and skipped it), never modified
                assertEquals(List.of(), strings(changes.body().get("modified")), "a swapped-in host file was read");
            }
            assertTrue(eloops > 0, "no walk met the symlink in " + rounds + " rounds");
        } finally {
            assertEquals(204, admin.delete("/v1/sandboxes/" + id).status());
        }
    }

    private static final String ELOOP = "Too many levels of symbolic links";

    /** Whether the walk failed; if so, only as the swap makes it fail, and without naming a host path. */
    private static boolean walkFailed(Api.Response r, Path host) {
        assertFalse(r.raw().body().contains(host.toString()), r.raw().body());
        assertFalse(r.raw().body().contains(daemon.stateDir().toString()), r.raw().body());
        if (r.status() == 200) {
            return false;
        }
        assertEquals(400, r.status(), r.raw().body());
        assertTrue(r.error().contains(ELOOP) || r.error().contains("disappeared while listing"), r.error());
        return true;
    }

    static void assertError(Api.Response r, int status, String fragment) {
        assertEquals(status, r.status(), r.raw().body());
        assertNotNull(r.error(), r.raw().body());
        assertTrue(r.error().contains(fragment), "'" + r.error() + "' should mention " + fragment);
    }
}
