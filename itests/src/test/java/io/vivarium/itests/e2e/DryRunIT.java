package io.vivarium.itests.e2e;

import static io.vivarium.itests.e2e.ChangeSetIT.assertError;
import static io.vivarium.itests.e2e.ChangeSetIT.ok;
import static io.vivarium.itests.e2e.ChangeSetIT.strings;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Dry-run on a process sandbox: report the changes, then leave the workspace exactly as it was,
 * also when the daemon is killed in the middle.
 */
class DryRunIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api admin;

    /** Sleeps only this run starts, found on the host by argv: other runs of this suite may share the machine. */
    private static final String RUN = Long.toString(ProcessHandle.current().pid());
    private static final String NAP_617 = "617." + RUN;
    private static final String NAP_61 = "61." + RUN;
    private static final String NAP_3 = "3." + RUN;
    private static final String NAP_CRASH = "618." + RUN;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        daemon = daemons.start(dir.resolve("state"), List.of());
        admin = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    private static Path workspace(String id) throws Exception {
        return admin.procboxWorkspace(id);
    }

    /** Every entry of the workspace: type, mode, owner, size, mtime, content hash or link target. */
    static Map<String, String> snapshot(Path root) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.toList()) {
                var a = Files.readAttributes(p, "unix:mode,uid,gid,size,lastModifiedTime", LinkOption.NOFOLLOW_LINKS);
                String what = Files.isSymbolicLink(p) ? "link->" + Files.readSymbolicLink(p)
                        : Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) ? "file:" + sha256(p) : "other";
                out.put(root.relativize(p).toString(), a + " " + what);
            }
        }
        return out;
    }

    private static String sha256(Path p) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String populated() throws Exception {
        String id = admin.createSandbox();
        Api.sh(admin, id, "mkdir -p /work/src/lib /work/gone /work/empty && echo 1 > /work/src/main.py && echo 2 > /work/src/old.py"
                + " && echo 3 > /work/src/lib/util.py && echo 4 > /work/gone/a && echo s > /work/secret && chmod 000 /work/secret"
                + " && ln -s src/main.py /work/link");
        return id;
    }

    @Test
    void reportsTheChangesAndPutsTheWorkspaceBackByteForByte() throws Exception {
        String id = populated();
        Map<String, String> before = snapshot(workspace(id));
        JsonNode r = ok(admin.post("/v1/sandboxes/" + id + "/dry-run", Map.of(
                "command", "echo changed > /work/src/main.py; rm /work/src/old.py; echo new > '/work/src/out file.txt';"
                        + " rm -rf /work/gone; mkdir /work/newdir; ln -s /etc/passwd /work/newlink; sleep " + NAP_617 + " & echo done",
                "paths", List.of("/work"))));
        assertEquals("done\n", r.get("stdout").asText());
        assertEquals(0, r.get("exit_code").asInt());
        assertTrue(r.get("discarded").asBoolean());
        assertEquals("overlay", r.get("reverted_via").asText());
        JsonNode c = r.get("changes");
        assertEquals(List.of("/work/src/out file.txt"), strings(c.get("added")));
        assertEquals(List.of("/work/src/main.py"), strings(c.get("modified")));
        assertEquals(List.of("/work/gone/a", "/work/src/old.py"), strings(c.get("deleted")));
        assertEquals(2, c.get("unchanged").asInt(), c.toString());
        assertEquals("sha256", c.get("mode").asText());

        assertEquals(before, snapshot(workspace(id)), "the workspace is byte-for-byte as before");
        assertFalse(hostRuns("sleep " + NAP_617), "processes the command started are gone");
        assertEquals("1\n", Api.sh(admin, id, "cat /work/src/main.py"));
    }

    @Test
    void aCommandThatFailsOrTimesOutStillLeavesTheWorkspaceAsItWas() throws Exception {
        String id = populated();
        Map<String, String> before = snapshot(workspace(id));
        JsonNode failed = ok(admin.post("/v1/sandboxes/" + id + "/dry-run", Map.of(
                "command", "rm -rf /work/src; exit 3", "paths", List.of("/work"))));
        assertEquals(3, failed.get("exit_code").asInt());
        assertTrue(failed.get("discarded").asBoolean());
        assertEquals(3, failed.get("changes").get("deleted").size());

        JsonNode timedOut = ok(admin.post("/v1/sandboxes/" + id + "/dry-run", Map.of(
                "command", "echo x > /work/half; sleep " + NAP_61, "paths", List.of("/work"), "timeout_secs", 1)));
        assertTrue(timedOut.get("timed_out").asBoolean());
        assertTrue(timedOut.get("discarded").asBoolean());
        assertEquals(List.of("/work/half"), strings(timedOut.get("changes").get("added")));
        assertEquals(before, snapshot(workspace(id)));
        assertFalse(hostRuns("sleep " + NAP_61));
    }

    @Test
    void oneDryRunAtATimeAndBadRequests() throws Exception {
        String id = populated();
        CompletableFuture<Api.Response> slow = CompletableFuture.supplyAsync(() -> {
            try {
                return admin.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "sleep " + NAP_3 + "; true", "paths", List.of("/work")));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!hostRuns("sleep " + NAP_3)) {
            assertFalse(slow.isDone(), () -> "the first dry-run ended before its command was seen: " + slow.join().raw().body());
            assertTrue(System.nanoTime() < deadline, "the first dry-run's command never started");
        }
        Api.Response second = admin.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "true", "paths", List.of("/work")));
        assertError(second, 409, "already running");
        assertEquals(200, Bounded.get(slow, Duration.ofSeconds(60), "the first dry-run answers").status());

        assertError(admin.outsideTheContract().post("/v1/sandboxes/" + id + "/dry-run", Map.of("paths", List.of("/work"))), 400, "command");
        assertError(admin.outsideTheContract().post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "true")), 400, "paths");
        assertError(admin.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "true", "paths", List.of("/work/nope"))),
                400, "not a directory");
    }

    /**
     * A daemon killed while a dry-run's command runs, once the command has written (the write is
     * in the overlay's upper layer, on the host), leaves the overlay mounted and its directory (the
     * command's twin sandbox goes with the daemon: bwrap's {@code --die-with-parent}); the next
     * daemon, adopting the sandbox, unmounts the overlay and removes its directory, nothing of the
     * dry-run runs, and the workspace is as it was.
     */
    @Test
    void aDryRunCutShortByAKilledDaemonIsRevertedWhenTheNextOneStarts() throws Exception {
        Path state = dir.resolve("crash-state");
        Daemon first = daemons.start(state, List.of());
        Api api = new Api(first.baseUrl(), first.adminToken());
        String id = api.createSandbox();
        Api.sh(api, id, "echo 1 > /work/a");
        Path work = api.procboxWorkspace(id);
        Map<String, String> before = snapshot(work);
        CompletableFuture.runAsync(() -> {
            try {
                api.post("/v1/sandboxes/" + id + "/dry-run", Map.of("command", "echo 2 > /work/a; echo x > /work/crash; sleep "
                        + NAP_CRASH, "paths", List.of("/work")));
            } catch (Exception killed) {
                // the daemon is killed under it
            }
        });
        Path scratch = DeployFolder.await("the dry-run's command to write /work/crash", Duration.ofSeconds(60),
                () -> scratchWith(state.resolve("sandboxes").resolve(id), "upper/crash"));
        first.kill9();
        assertFalse(StateDirLeftovers.mounts(scratch).isEmpty(), "a killed daemon leaves the overlay mounted");

        Daemon second = daemons.start(state, List.of());
        Api again = new Api(second.baseUrl(), second.adminToken());
        assertEquals("1\n", Api.sh(again, id, "cat /work/a"), "the sandbox is re-adopted and its workspace untouched");
        DeployFolder.await("the adoption to discard the dry-run's overlay", Duration.ofSeconds(30),
                () -> Files.exists(scratch) ? null : true);
        assertEquals(List.of(), StateDirLeftovers.mounts(scratch), "the overlay is unmounted");
        assertEquals(List.of(), StateDirLeftovers.processes(scratch), "no process of the dry-run's twin runs");
        assertFalse(hostRuns("sleep " + NAP_CRASH), "the command the dry-run started is gone");
        assertEquals(before, snapshot(work), "the workspace is byte-for-byte as before");
        assertEquals("gone\n", Api.sh(again, id, "test -e /work/crash && echo there || echo gone"));
    }

    /** The dry-run scratch directory ({@code dryrun-*}) under {@code sandboxDir} that holds {@code file}, or null. */
    private static Path scratchWith(Path sandboxDir, String file) throws IOException {
        try (Stream<Path> found = Files.find(sandboxDir, 2, (p, a) -> a.isDirectory()
                && p.getFileName().toString().startsWith("dryrun-") && Files.exists(p.resolve(file)))) {
            return found.findFirst().orElse(null);
        }
    }

    private static boolean hostRuns(String args) throws IOException {
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            return procs.filter(p -> p.getFileName().toString().matches("\\d+")).anyMatch(p -> {
                try {
                    return new String(Files.readAllBytes(p.resolve("cmdline"))).replace('\0', ' ').strip().equals(args);
                } catch (IOException e) {
                    return false;
                }
            });
        }
    }
}
