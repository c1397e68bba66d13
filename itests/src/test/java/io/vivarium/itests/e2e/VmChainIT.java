package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A chain of VM snapshots on real QEMU (TCG), one boot: a snapshot built from a booted VM, three
 * levels of branches of children ({@link VmChains}: RAM as page diffs with storage-diffchain, which
 * the qemu feature installs), the top compacted, the chain deleted, and a child of the compacted
 * snapshot that resumes the top's files and RAM. State on a loop-mounted XFS (reflink).
 */
class VmChainIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features",
            "core,api-v1,qemu,storage-reflink,fingerprint-sha256");
    private static final int DEPTH = 3;

    @TempDir
    Path work;

    @Test
    void aCompactedChainForksWithoutItsAncestors() throws Exception {
        String missing = Host.qemuMissing("default");
        Assumptions.assumeTrue(missing == null, missing);
        Path state = daemons.xfsStateDir(work);
        Daemon daemon = daemons.start(state, FEATURES);
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        Api.Response built = api.post("/v1/snapshots", Map.of("tag", "vm", "backend", "qemu", "memory_limit_mib", 256,
                "setup", List.of("sh", "-c", "echo base > /work/base.txt")));
        assertEquals(201, built.status(), String.valueOf(built.body()));

        Map<String, String> chain = VmChains.build(api, "vm", DEPTH);
        String top = "vm-" + DEPTH;
        for (int level = 1; level <= DEPTH; level++) {
            String tag = "vm-" + level;
            JsonNode info = api.get("/v1/snapshots/" + tag + "/info").body();
            assertEquals(level, info.get("chain_depth").asInt(), info.toString());
            JsonNode memory = manifest(state, tag).get("memory");
            assertEquals("diff", memory.get("mode").asText(), "the RAM of a branch of a child is a page diff: " + memory);
            assertEquals(level, memory.get("depth").asInt(), memory.toString());
        }

        Api.Response compacted = api.post("/v1/snapshots/" + top + "/compact", Map.of("to", "flat"));
        assertEquals(201, compacted.status(), String.valueOf(compacted.body()));
        JsonNode info = api.get("/v1/snapshots/flat/info").body();
        assertEquals(0, info.get("chain_depth").asInt(), info.toString());
        assertFalse(info.hasNonNull("parent_tag"), "a compacted snapshot has no parent: " + info);
        assertTrue(info.path("ancestors").isEmpty(), info.toString());
        assertTrue(info.get("bootable").asBoolean(), info.toString());
        JsonNode manifest = manifest(state, "flat");
        for (String artifact : List.of("memory", "disk")) {
            assertEquals(0, manifest.get(artifact).get("depth").asInt(), manifest.toString());
            assertFalse(manifest.get(artifact).has("parent"), "the compacted " + artifact + " stands alone: " + manifest);
        }

        Api.Response deleted = api.delete("/v1/snapshots/vm?cascade=true");
        assertEquals(204, deleted.status(), String.valueOf(deleted.body()));
        assertEquals(404, api.get("/v1/snapshots/" + top + "/info").status(), "the cascade removed the whole chain");

        String child = VmChains.fork(api, "flat");
        assertEquals("base\nlevel-1\nlevel-2\nlevel-3\n",
                Api.sh(api, child, "cat /work/base.txt /work/level-1 /work/level-2 /work/level-3"));
        assertEquals(chain.get(top), Api.sh(api, child, "md5sum < /tmp/level-" + DEPTH),
                "the child's RAM (a tmpfs file) is the top's at its branch");
        for (int level = 1; level <= DEPTH; level++) {
            assertEquals("alive\n", Api.sh(api, child, "read -r _ c s _ </proc/$(cat /work/bg-" + level + ".pid)/stat "
                    + "&& [ \"$c\" = '(sleep)' ] && [ \"$s\" != Z ] && echo alive || echo gone"),
                    "the background process level " + level + " started runs on");
        }
        assertEquals(child + "\n", Api.sh(api, child, "hostname"));
    }

    /** The {@code vm.json} of {@code tag}'s image. */
    private static JsonNode manifest(Path state, String tag) throws IOException {
        try (Stream<Path> dirs = Files.walk(state.resolve("snapshots"), 3)) {
            Path dir = dirs.filter(d -> d.getFileName().toString().equals(tag)).findFirst()
                    .orElseThrow(() -> new AssertionError("no snapshot directory " + tag));
            return Api.JSON.readTree(dir.resolve("image").resolve("vm.json").toFile());
        }
    }
}
