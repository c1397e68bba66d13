package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import io.vivarium.api.SandboxInfo;
import io.vivarium.api.state.StateStore;
import io.vivarium.common.state.FileStateStore;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node's own list is the truth: what a master crash left unrecorded is adopted, what is gone is
 * dropped (unless it was created after the list was asked for), nothing else moves.
 */
class PlacementsTest {
    @TempDir
    Path dir;

    private static SandboxInfo sandbox(String id, String tenant, String status) {
        return sandbox(id, tenant, status, 1);
    }

    private static SandboxInfo sandbox(String id, String tenant, String status, long createdAtUnix) {
        return new SandboxInfo(id, "procbox", tenant, status, createdAtUnix, 2, null, null, null);
    }

    @Test
    void reconcilingANodeAdoptsWhatItRunsUnrecordedDropsWhatIsGoneAndLeavesOtherNodesAlone() throws Exception {
        try (StateStore store = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            Placements placements = new Placements(store);
            placements.put("n1", sandbox("kept", "t1", "running"));
            placements.put("n1", sandbox("gone", "t1", "running"));
            placements.put("n2", sandbox("elsewhere", "t2", "running"));
            placements.put("n1", sandbox("created-while-asking", "t1", "running", 1000));

            placements.reconcile("n1", List.of(sandbox("kept", "t1", "paused"), sandbox("unrecorded", "t3", "running"),
                    sandbox("elsewhere", "t2", "running")), 999);

            assertEquals(Set.of("kept:n1", "unrecorded:n1", "elsewhere:n2", "created-while-asking:n1"),
                    placements.all().stream().map(p -> p.sandbox() + ":" + p.node()).collect(Collectors.toSet()));
            assertEquals("t3", placements.of("unrecorded").orElseThrow().tenant(), "adopted with the tenant the node says");
            assertEquals("paused", placements.of("kept").orElseThrow().last().status(), "what the node last said is kept");
        }
        try (StateStore again = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            assertEquals(4, new Placements(again).all().size(), "placements are durable records");
            assertTrue(new Placements(again).of("../x").isEmpty(), "a key that cannot be a record is no placement");
        }
    }
}
