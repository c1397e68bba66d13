package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import io.vivarium.api.SandboxInfo;
import io.vivarium.api.spi.HeldImage;
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
    void reconcilingANodeAdoptsWhatItRunsUnrecordedDropsWhatIsGoneAndLeavesOtherNodesAloneByTheMastersClock() throws Exception {
        try (StateStore store = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            long[] masterClock = {900};
            Placements placements = new Placements(store, () -> masterClock[0]);
            placements.put("n1", sandbox("kept", "t1", "running"));
            placements.put("n1", sandbox("gone", "t1", "running", 5000)); // the node's clock ahead of the master's
            placements.put("n2", sandbox("elsewhere", "t2", "running"));
            masterClock[0] = 1000;
            placements.put("n1", sandbox("created-while-asking", "t1", "running", 10)); // and behind it

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

    @Test
    void aPortsNonceIsMadeOnceKeptAcrossRefreshesAndRestartsAndForgottenWhenClosedOrMoved() throws Exception {
        try (StateStore store = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            Placements placements = new Placements(store);
            assertTrue(placements.portNonce("nowhere", 8000).isEmpty(), "no placement, no nonce");
            placements.put("n1", sandbox("sb", "t1", "running"));
            String nonce = placements.portNonce("sb", 8000).orElseThrow();
            assertEquals(nonce, placements.portNonce("sb", 8000).orElseThrow(), "made once");
            String other = placements.portNonce("sb", 8001).orElseThrow();
            placements.put("n1", sandbox("sb", "t1", "paused"));
            placements.reconcile("n1", List.of(sandbox("sb", "t1", "running")), 0);
            assertEquals(Map.of(8000, nonce, 8001, other), placements.of("sb").orElseThrow().ports(),
                    "a refresh and a reconciliation keep the ports");
            placements.closePort("sb", 8000);
            placements.closePort("sb", 8000);
            assertEquals(Map.of(8001, other), placements.of("sb").orElseThrow().ports());
        }
        try (StateStore again = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            Placements placements = new Placements(again);
            assertEquals(Map.of(8001, placements.of("sb").orElseThrow().ports().get(8001)),
                    placements.of("sb").orElseThrow().ports(), "kept in the record");
            placements.put("n2", sandbox("sb", "t1", "running"));
            assertEquals(Map.of(), placements.of("sb").orElseThrow().ports(), "placed on another node: its ports are not");
        }
    }

    private static HeldImage held(String tenant, String tag, boolean copy) {
        return new HeldImage(tenant, tag, copy, "ready");
    }

    @Test
    void reconcilingANodesTagsAdoptsItsOwnAndItsCopiesDropsWhatIsGoneAndNamesOrphanCopies() throws Exception {
        try (StateStore store = FileStateStore.open(dir, "m.fleet", FleetCollections.ALL)) {
            Placements placements = new Placements(store);
            placements.putTag("t1", "kept", "n1");
            placements.putTag("t1", "gone", "n1");
            placements.putTag("t1", "copied", "n2");
            placements.updateTag("t1", "copied", t -> t.withCopy("n1").withCopy("n3"));
            placements.putTag("t1", "fetched-unrecorded", "n2");
            placements.putTag("t1", "elsewhere", "n2");
            long listedAt = java.time.Instant.now().getEpochSecond() + 1; // every record above is older than the list

            List<HeldImage> orphans = placements.reconcileTags("n1", List.of(held("t1", "kept", false),
                    held("t1", "fetched-unrecorded", true), held("t2", "branched-unrecorded", false),
                    held("t1", "deleted-meanwhile", true), new HeldImage("t1", "being-written", false, "writing")), listedAt);

            assertEquals(List.of(held("t1", "deleted-meanwhile", true)), orphans, "a copy of a tag the master does not know");
            assertEquals("n1", placements.tag("t1", "kept").orElseThrow().node());
            assertTrue(placements.tag("t1", "gone").isEmpty(), "a tag the node no longer holds is dropped");
            assertEquals(List.of("n3"), placements.tag("t1", "copied").orElseThrow().copies(), "a copy the node no longer holds too");
            assertEquals(List.of("n1"), placements.tag("t1", "fetched-unrecorded").orElseThrow().copies(), "a copy it holds is recorded");
            assertEquals("n1", placements.tag("t2", "branched-unrecorded").orElseThrow().node(), "a tag of its own is adopted");
            assertTrue(placements.tag("t1", "being-written").isEmpty(), "a tag still being written waits for the next round");
            assertEquals("n2", placements.tag("t1", "elsewhere").orElseThrow().node(), "other nodes' tags are left alone");

            placements.putTag("t1", "just-branched", "n1");
            placements.reconcileTags("n1", List.of(), 1);
            assertTrue(placements.tag("t1", "just-branched").isPresent(), "a tag recorded after the node was asked is kept");
        }
    }
}
