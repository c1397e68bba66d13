package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;
import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StateStoreProvider;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;
import io.vivarium.common.state.FileStateStore;
import io.vivarium.common.state.NodeId;
import io.vivarium.testkit.FakeBackend;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store that cannot be reached (a database away: 503 with Retry-After) in the middle of core's
 * writes: nothing the caller was told failed stays behind, and a delete that was refused can be
 * sent again.
 */
class StoreAwayTest {
    static final Caller ALICE = new Caller("alice", Role.ADMIN);

    @TempDir
    Path state;

    /** The file store, whose commits answer 503 as {@link #refuseAfter} says. */
    static final class Flaky implements StateStoreProvider {
        private final AtomicInteger allowed = new AtomicInteger(Integer.MAX_VALUE);
        private final AtomicInteger refused = new AtomicInteger();

        /** Lets {@code pass} more commits through, then refuses {@code refuse}, then lets all through. */
        void refuseAfter(int pass, int refuse) {
            refused.set(refuse);
            allowed.set(pass);
        }

        private boolean refuses() {
            if (allowed.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                return false;
            }
            return refused.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
        }

        @Override
        public StateStore open(Path stateDir, String node, List<RecordCollection<?>> collections, StoreEvents events)
                throws IOException {
            FileStateStore files = FileStateStore.open(stateDir, node, collections, events);
            return new StateStore() {
                @Override
                public String node() {
                    return files.node();
                }

                @Override
                public <T> Optional<Stored<T>> get(RecordCollection<T> c, String key) {
                    return files.get(c, key);
                }

                @Override
                public <T> List<Stored<T>> all(RecordCollection<T> c) {
                    return files.all(c);
                }

                @Override
                public void commit(Transaction tx) throws IOException {
                    if (refuses()) {
                        throw ApiException.unavailable("the state store cannot be reached", 2);
                    }
                    files.commit(tx);
                }

                @Override
                public void close() {
                    files.close();
                }
            };
        }

        @Override
        public String describe(Path stateDir) {
            return "a flaky store";
        }
    }

    private WholeCore started(Flaky store) throws Exception {
        WholeCore m = new WholeCore();
        m.backendArrived(new BackendRegistry.Entry("fake", new FakeBackend(), "test.bundle", "1.0.0", 1));
        m.bindStateStores(store, Map.of());
        m.start(state, "", Duration.ZERO);
        return m;
    }

    /** The sandbox records as the running store holds them (a database's rows, not the files a directory removal takes along). */
    private static List<String> records(WholeCore m) {
        return m.core().sandboxes().state().all(StateCollections.SANDBOXES).stream().map(Stored::key).toList();
    }

    private List<String> recordsOnDisk() throws IOException {
        try (FileStateStore files = FileStateStore.open(state, NodeId.readOrCreate(state), StateCollections.ALL)) {
            return files.all(StateCollections.SANDBOXES).stream().map(Stored::key).toList();
        }
    }

    @Test
    void aCreateWhoseSecondWriteIsRefusedLeavesNoRecordOnceAWriteGetsThroughAgain() throws Exception {
        Flaky store = new Flaky();
        WholeCore m = started(store);
        // the create's first record lands; the second (created) and the undo's delete are refused
        store.refuseAfter(1, 2);
        ApiException away = assertThrows(ApiException.class, () -> m.create(ALICE, null));
        assertEquals(503, away.status());
        assertEquals(List.of(), m.list(ALICE), "the caller was told it failed: no sandbox");
        assertEquals(1, records(m).size(), "its first record is still in the store while the store refuses");

        var next = m.create(ALICE, null);
        assertEquals(List.of(next.id()), records(m), "the next write that got through removed it");
        assertEquals(List.of(next.id()), recordsOnDisk());
    }

    @Test
    void aDeleteWhoseRecordRemovalIsRefusedKeepsTheSandboxAndASecondDeleteFinishesIt() throws Exception {
        Flaky store = new Flaky();
        WholeCore m = started(store);
        String id = m.create(ALICE, null).id();

        store.refuseAfter(0, 1);
        assertEquals(503, assertThrows(ApiException.class, () -> m.delete(ALICE, id)).status());
        assertEquals(List.of(id), m.list(ALICE).stream().map(s -> s.id()).toList(), "still known: the delete can be sent again");
        assertEquals(List.of(id), recordsOnDisk());

        m.delete(ALICE, id);
        assertEquals(List.of(), m.list(ALICE));
        assertEquals(List.of(), recordsOnDisk());
    }
}
