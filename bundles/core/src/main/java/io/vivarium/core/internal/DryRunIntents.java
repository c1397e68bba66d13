package io.vivarium.core.internal;

import java.io.IOException;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;

/**
 * The checkpoint a VM dry-run is using, stored ({@link StateCollections#DRY_RUNS}) before the
 * checkpoint is taken and removed once it is deleted, so that a dry-run cut short by a
 * {@code kill -9} is finished at start-up (restored and deleted) instead of left behind.
 */
final class DryRunIntents {
    static final String FILE = "dry-run-intent.json";
    /** The checkpoint may exist; the VM may hold the command's changes. */
    static final String CHECKPOINTING = "checkpointing";
    /** The VM was restored; only the checkpoint remains to delete. */
    static final String RESTORED = "restored";

    /** One dry-run in progress. */
    record Intent(String tag, String phase, long startedAtUnix) {
        Intent restored() {
            return new Intent(tag, RESTORED, startedAtUnix);
        }
    }

    private final Sandboxes sandboxes;

    DryRunIntents(Sandboxes sandboxes) {
        this.sandboxes = sandboxes;
    }

    void write(String id, Intent intent) {
        StateStore state = sandboxes.state();
        try {
            state.put(StateCollections.DRY_RUNS, id, intent,
                    state.get(StateCollections.DRY_RUNS, id).map(Stored::revision).orElse(Stored.ABSENT));
        } catch (IOException e) {
            throw ApiException.internal("cannot record the dry-run's checkpoint of sandbox " + id
                    + ", so the dry-run did not start", e);
        }
    }

    Optional<Intent> read(String id) {
        return sandboxes.state().get(StateCollections.DRY_RUNS, id).map(Stored::body);
    }

    void clear(String id) throws IOException {
        sandboxes.state().deleteIfPresent(StateCollections.DRY_RUNS, id);
    }
}
