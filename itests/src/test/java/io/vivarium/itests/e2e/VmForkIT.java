package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * VM snapshots end to end on real QEMU (TCG), with one boot for the whole class: a snapshot built
 * from a booted VM, children forked from it that resume its state (a file and a background process)
 * and are each their own (hostname, machine id, random bytes), whose writes never reach the
 * snapshot's files; then a branch of a child and a grandchild forked from it that resumes the
 * child's files and RAM. The state directory is on a loop-mounted XFS so that reflink is real.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class VmForkIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features",
            "core,api-v1,qemu,storage-reflink,fingerprint-sha256");
    /** Whether $1 is a live sleep, with shell builtins only. */
    private static final String ALIVE = "read -r _ c s _ 2>/dev/null </proc/$1/stat && [ \"$c\" = '(sleep)' ] "
            + "&& [ \"$s\" != Z ] && echo alive || echo gone";
    private static final String SETUP = "echo parent > /work/state.txt; sleep 1000 >/dev/null 2>&1 </dev/null &"
            + " echo $! > /work/bg.pid";

    @TempDir
    static Path work;
    static Path state;
    static Api api;
    static Daemon daemon;
    static Map<String, String> snapshotFiles;
    static List<String> children;

    @BeforeAll
    static void aSnapshotOfOneBootedVm() throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        state = daemons.xfsStateDir(work);
        daemon = daemons.start(state, FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        Api.Response r = api.post("/v1/snapshots", Map.of("tag", "vm", "backend", "qemu", "memory_limit_mib", 256,
                "setup", List.of("sh", "-c", SETUP)));
        assertEquals(201, r.status(), String.valueOf(r.body()));
        assertEquals("files+memory", r.body().get("captures").asText());
        assertTrue(r.body().get("bootable").asBoolean(), r.body().toString());
        snapshotFiles = hashes(imageDir("vm"));
        assertTrue(snapshotFiles.keySet().containsAll(List.of("memory.ram", "disk.qcow2", "devices.state", "vm.json")),
                snapshotFiles.keySet().toString());
    }

    @Test
    @Order(1)
    void childrenResumeTheParentAndAreEachTheirOwn() throws Exception {
        children = api.fork("vm", 2);
        List<String> random = new ArrayList<>();
        List<String> machineIds = new ArrayList<>();
        for (String id : children) {
            assertEquals("parent\n", Api.sh(api, id, "cat /work/state.txt"));
            assertEquals("alive\n", Api.sh(api, id, "set -- $(cat /work/bg.pid); " + ALIVE),
                    "the background process started before the snapshot runs on in " + id);
            assertEquals(id + "\n", Api.sh(api, id, "hostname"));
            machineIds.add(Api.sh(api, id, "cat /etc/machine-id"));
            random.add(Api.sh(api, id, "head -c 32 /dev/urandom | od -An -tx1"));
        }
        assertNotEquals(machineIds.get(0), machineIds.get(1));
        assertNotEquals(random.get(0), random.get(1), "two children of one snapshot draw different random bytes");
    }

    @Test
    @Order(2)
    void childrenWritesNeverReachTheSnapshot() throws Exception {
        for (String id : children) {
            Api.sh(api, id, "echo " + id + " > /work/state.txt; head -c 8388608 /dev/urandom > /tmp/ram.bin; sync");
        }
        assertEquals(snapshotFiles, hashes(imageDir("vm")));
        String late = api.fork("vm", 1).get(0);
        assertEquals("parent\n", Api.sh(api, late, "cat /work/state.txt; ls /tmp/ram.bin 2>/dev/null"));
        assertEquals(204, api.delete("/v1/sandboxes/" + late).status());
    }

    @Test
    @Order(3)
    void aBranchOfAChildKeepsItsFilesAndRamForItsOwnChildren() throws Exception {
        String child = children.get(0);
        String ram = Api.sh(api, child, "md5sum < /tmp/ram.bin");
        Api.Response r = api.post("/v1/sandboxes/" + child + "/branch", Map.of("tag", "vm-branch"));
        assertEquals(201, r.status(), String.valueOf(r.body()));
        JsonNode branch = r.body();
        assertEquals(child, branch.get("branched_from").asText());
        assertEquals("vm", branch.get("parent_tag").asText());
        assertEquals("files+memory", branch.get("captures").asText());
        assertTrue(branch.get("pause_ms").asLong() >= 0, branch.toString());
        assertEquals(child + "\n", Api.sh(api, child, "cat /work/state.txt"), "the branched child runs on");

        String grandchild = api.fork("vm-branch", 1).get(0);
        assertEquals(child + "\n", Api.sh(api, grandchild, "cat /work/state.txt"));
        assertEquals(ram, Api.sh(api, grandchild, "md5sum < /tmp/ram.bin"),
                "the grandchild's RAM (a tmpfs file) is the child's at the branch");
        assertEquals("alive\n", Api.sh(api, grandchild, "set -- $(cat /work/bg.pid); " + ALIVE));
        assertEquals(grandchild + "\n", Api.sh(api, grandchild, "hostname"));
        assertEquals(snapshotFiles, hashes(imageDir("vm")));
    }

    @Test
    @Order(4)
    void aRestartedDaemonAdoptsTheChildrenWhichOutliveTheirSnapshot() throws Exception {
        String child = children.get(1);
        long pid = api.get("/v1/sandboxes/" + child).body().get("pid").asLong();
        assertEquals(0, daemon.stop(), "SIGTERM stops the daemon cleanly");
        daemon = daemons.start(state, FEATURES);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        JsonNode sb = api.get("/v1/sandboxes/" + child).body();
        assertEquals("running", sb.get("status").asText(), sb.toString());
        assertEquals(pid, sb.get("pid").asLong(), "the same QEMU");
        assertEquals(child + "\n", Api.sh(api, child, "cat /work/state.txt"));
        Api.Response r = api.post("/v1/sandboxes/" + child + "/branch", Map.of("tag", "after-restart"));
        assertEquals(201, r.status(), String.valueOf(r.body()));
        String grandchild = api.fork("after-restart", 1).get(0);
        assertEquals(child + "\n", Api.sh(api, grandchild, "cat /work/state.txt"));

        // (here, because the daemon started in this test goes with it) children outlive their snapshot
        assertEquals(204, api.delete("/v1/snapshots/vm?force=true").status());
        assertEquals(child + "\n", Api.sh(api, child, "cat /work/state.txt"), "the child runs on");
        Api.Response branch = api.post("/v1/sandboxes/" + child + "/branch", Map.of("tag", "orphan"));
        assertEquals(409, branch.status(), String.valueOf(branch.body()));
        assertTrue(branch.error().contains("forked from"), branch.error());
        Api.Response fork = api.post("/v1/sandboxes", Map.of("snapshot_tag", "vm-branch", "n", 1));
        assertEquals(409, fork.status(), String.valueOf(fork.body()));
        assertTrue(fork.error().contains("/vm/image/"), "names the missing parent: " + fork.error());
    }

    private static Path imageDir(String tag) throws IOException {
        try (Stream<Path> dirs = Files.walk(state.resolve("snapshots"), 3)) {
            return dirs.filter(d -> d.getFileName().toString().equals(tag)).findFirst()
                    .orElseThrow(() -> new AssertionError("no snapshot directory " + tag)).resolve("image");
        }
    }

    private static Map<String, String> hashes(Path dir) throws IOException, NoSuchAlgorithmException {
        Map<String, String> hashes = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                try (InputStream in = Files.newInputStream(f)) {
                    byte[] buf = new byte[1 << 20];
                    for (int n; (n = in.read(buf)) > 0;) {
                        sha.update(buf, 0, n);
                    }
                }
                hashes.put(f.getFileName().toString(), HexFormat.of().formatHex(sha.digest()));
            }
        }
        assertFalse(hashes.isEmpty(), "no files in " + dir);
        return hashes;
    }
}
