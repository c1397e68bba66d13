package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;
import io.vivarium.common.state.FileStateStore;
import io.vivarium.common.state.NodeId;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Snapshot records in the state store: their keys, and compare-and-set between requests that race. */
class SnapshotRecordsTest {
    static final Caller ALICE = new Caller("alice", Role.ADMIN);

    @TempDir
    Path state;

    private FileStateStore store;
    private Snapshots snapshots;

    @BeforeEach
    void open() throws Exception {
        store = FileStateStore.open(state, NodeId.readOrCreate(state), StateCollections.ALL);
        snapshots = new Snapshots(new BackendRegistry(new BackendSeams()));
        snapshots.open(store, state);
    }

    @AfterEach
    void close() {
        store.close();
    }

    private SnapshotRecord take(String tag, String parent) {
        SnapshotRecord writing = SnapshotRecord.writing("alice", tag, "fake", 1, parent == null ? null : "sb-1", parent, null);
        snapshots.reserve(writing, ApiException.conflict("taken"));
        SnapshotRecord ready = writing.ready("files", null, List.of());
        snapshots.update(writing, ready);
        return ready;
    }

    private List<String> tags() {
        return snapshots.list(ALICE).stream().map(i -> i.tag()).toList();
    }

    @Test
    void keysAreValidAndDistinctWhateverDotsTheNamesHold() {
        assertEquals("5-alice.py-base", SnapshotTags.key("alice", "py-base"));
        assertNotEquals(SnapshotTags.key("a.b", "c"), SnapshotTags.key("a", "b.c"));
        assertEquals("15-_2e2e2f6576696c.base", SnapshotTags.key("../evil", "base"));
        assertTrue(SnapshotTags.key("../evil", "base").matches("[A-Za-z0-9][A-Za-z0-9._-]{0,199}"));
        String longest = SnapshotTags.key("t".repeat(64), "x".repeat(64));
        assertTrue(longest.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,199}"), longest);
    }

    @Test
    void aTenantTooLongForAKeyIsA400NotA500() {
        SnapshotRecord r = SnapshotRecord.writing("\u00e9".repeat(70), "base", "fake", 1, null, null, null);
        assertEquals(400, assertThrows(ApiException.class, () -> snapshots.reserve(r, ApiException.conflict("taken")))
                .status());
    }

    @Test
    void ofTwoDeletesOfOneTagThatReadItTogetherOneWinsTheOtherIsA409() {
        take("base", null);
        Runnable first = snapshots.deletion(ALICE, "base", false, false);
        Runnable second = snapshots.deletion(ALICE, "base", false, false);
        first.run();
        ApiException lost = assertThrows(ApiException.class, second::run);
        assertEquals(409, lost.status());
        assertTrue(lost.getMessage().contains("meanwhile"), lost.getMessage());
        assertEquals(List.of(), tags());
    }

    @Test
    void aBranchOfTheParentBetweenTheReadAndTheCommitOfItsDeleteFailsTheDelete() {
        take("base", null);
        Runnable delete = snapshots.deletion(ALICE, "base", false, false);
        take("br", "base");
        assertEquals(409, assertThrows(ApiException.class, delete::run).status());
        assertEquals(List.of("base", "br"), tags(), "no record names a parent that is gone");
    }

    @Test
    void aCascadeOverASnapshotStillWrittenDeletesNothing() {
        take("base", null);
        take("br", "base");
        snapshots.reserve(SnapshotRecord.writing("alice", "br2", "fake", 1, "sb-2", "br", null), ApiException.conflict("taken"));
        assertEquals(409, assertThrows(ApiException.class, () -> snapshots.delete(ALICE, "base", true, false)).status());
        assertEquals(List.of("base", "br", "br2"), tags());
    }

    @Test
    void aForcedDeleteClearsTheParentOfItsDependentsInTheSameTransaction() {
        take("base", null);
        take("br", "base");
        snapshots.delete(ALICE, "base", false, true);
        assertNull(snapshots.lookup("alice", "br").orElseThrow().parentTag());
        take("base", null);
        assertEquals(List.of(), snapshots.dependents(snapshots.lookup("alice", "base").orElseThrow()),
                "a new snapshot under the old tag does not adopt the orphan");
    }

    @Test
    void anUpdateFromARecordThatChangedMeanwhileIsA409() {
        SnapshotRecord ready = take("base", null);
        SnapshotRecord failed = ready.failed("x");
        snapshots.update(ready, failed);
        assertEquals(409, assertThrows(ApiException.class, () -> snapshots.update(ready, ready.failed("y"))).status());
        assertEquals(Optional.of(failed), snapshots.lookup("alice", "base"));
    }
}
