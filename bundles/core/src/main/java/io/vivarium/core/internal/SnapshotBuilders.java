package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;

/**
 * The builder sandboxes of snapshot builds a crash interrupted: their snapshot is marked failed at
 * start-up, and they are deleted in the background (a delete waits for its backend to register),
 * so no builder is left running for good.
 */
final class SnapshotBuilders {
    private static final System.Logger LOG = System.getLogger(SnapshotBuilders.class.getName());

    private SnapshotBuilders() {
    }

    static void removeLeftOvers(List<SnapshotRecord> interrupted, SandboxLifecycle lifecycle) {
        List<SnapshotRecord> withBuilder = interrupted.stream().filter(r -> r.builder() != null).toList();
        if (withBuilder.isEmpty()) {
            return;
        }
        Thread t = new Thread(() -> {
            for (SnapshotRecord r : withBuilder) {
                try {
                    lifecycle.delete(new Caller(r.tenant(), Role.ADMIN), r.builder());
                    LOG.log(Level.INFO, "removed builder sandbox " + r.builder() + " of interrupted snapshot " + r.tag());
                } catch (ApiException e) {
                    LOG.log(e.status() == 404 ? Level.DEBUG : Level.WARNING, "builder sandbox " + r.builder()
                            + " of interrupted snapshot " + r.tag() + " not removed: " + e.getMessage());
                }
            }
        }, "vivarium-snapshot-builders");
        t.setDaemon(true);
        t.start();
    }
}
