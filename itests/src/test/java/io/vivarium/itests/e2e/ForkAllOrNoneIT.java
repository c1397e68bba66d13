package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A fork of N on procbox whose last child really fails leaves no child: the children made before
 * it are removed, as the API and the host both show (no sandbox listed; no process, mount, cgroup
 * or directory of theirs left). The failure is real and exactly placed: the daemon holds the N-th
 * child at core's test point {@code fork.child} ({@code -Dvivarium.test.hold.at}) until the others
 * run, the test deletes the snapshot's workspace on the host (an artifact lost under the daemon),
 * then lets the held child go on, and its copy of that workspace fails.
 */
class ForkAllOrNoneIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final int N = 3;
    private static final Duration PATIENCE = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    @BeforeAll
    static void needsProcbox() {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
    }

    @Test
    void aForkWhoseLastChildFailsRemovesTheChildrenMadeBeforeIt() throws Exception {
        Path state = dir.resolve("state");
        Path gate = dir.resolve("let-the-last-child-go");
        Daemon daemon = daemons.start(state, List.of(), List.of("-Dvivarium.test.hold.at=fork.child#" + N + ":" + gate));
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        Api.Response built = api.post("/v1/snapshots", Map.of("tag", "base", "setup",
                List.of("sh", "-c", "echo template > /work/t.txt")));
        assertEquals(201, built.status(), built.raw().body());
        Path snapshotDir = Path.of(built.body().get("dir").asText());

        CompletableFuture<Api.Response> fork = CompletableFuture.supplyAsync(() -> {
            try {
                return api.post("/v1/sandboxes", Map.of("snapshot_tag", "base", "n", N));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        daemon.awaitOutput("holding at test point fork.child#" + N, PATIENCE);
        Map<String, Long> made = DeployFolder.await("the " + (N - 1) + " children not held to run", PATIENCE,
                () -> runningChildren(api));
        assertFalse(fork.isDone(), () -> "the fork answered while its last child was held: " + fork.join().raw().body());
        List<Path> cgroups = new ArrayList<>();
        made.forEach((id, pid) -> cgroups.addAll(HostProcesses.cgroups(pid).stream()
                .filter(cgroup -> cgroup.getFileName().toString().equals(id)).toList()));
        assertFalse(cgroups.isEmpty(), "the children run in cgroups of their own: " + made);

        deleteWorkspaceOf(snapshotDir);
        Files.createFile(gate);
        Api.Response failed = fork.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);

        // the snapshot's image vanished under the daemon: its own data lost, a server error
        assertEquals(500, failed.status(), failed.raw().body());
        assertTrue(failed.error().matches("child \\d of " + N + " from snapshot base failed, so the " + (N - 1)
                + " made were removed: .*"), failed.error());
        assertEquals(0, api.get("/v1/sandboxes").body().size(), "no child is listed");
        for (Map.Entry<String, Long> child : made.entrySet()) {
            assertEquals(404, api.get("/v1/sandboxes/" + child.getKey()).status(), child.getKey());
            assertFalse(ProcessHandle.of(child.getValue()).isPresent(), "the init of " + child.getKey() + " is gone");
        }
        Path sandboxes = state.resolve("sandboxes");
        assertEquals(List.of(), StateDirLeftovers.processes(sandboxes), "no process of a child runs");
        assertEquals(List.of(), StateDirLeftovers.mounts(sandboxes), "no workspace of a child is mounted");
        assertEquals(List.of(), cgroups.stream().filter(Files::exists).toList(), "no cgroup of a child is left");
        try (var left = Files.list(sandboxes)) {
            assertEquals(List.of(), left.toList(), "no directory of a child is left");
        }
    }

    /** The running sandboxes with their init's host pid, once there are N - 1 of them, each answering. */
    private static Map<String, Long> runningChildren(Api api) throws Exception {
        JsonNode list = api.get("/v1/sandboxes").body();
        if (list.size() != N - 1) {
            return null;
        }
        Map<String, Long> running = new LinkedHashMap<>();
        for (JsonNode sb : list) {
            String id = sb.get("id").asText();
            Api.Response r = api.post("/v1/sandboxes/" + id + "/exec", Map.of("args", List.of("cat", "/work/t.txt")));
            if (r.status() != 200 || !"template\n".equals(r.body().get("stdout").asText())) {
                return null;
            }
            running.put(id, api.get("/v1/sandboxes/" + id).body().get("pid").asLong());
        }
        return running;
    }

    /**
     * Deletes the workspace a child is copied from, in the image below the snapshot's directory: an
     * image file where workspaces are loop-mounted, else a tree.
     */
    private static void deleteWorkspaceOf(Path snapshotDir) throws Exception {
        Path workspace;
        try (Stream<Path> found = Files.find(snapshotDir, 2, (p, a) -> p.getFileName().toString().equals("workspace.ext4")
                || p.getFileName().toString().equals("work") && a.isDirectory())) {
            workspace = found.findFirst().orElseThrow(() -> new AssertionError("no workspace in " + snapshotDir));
        }
        try (Stream<Path> walk = Files.walk(workspace)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
