package io.vivarium.core.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotInfoDetail;
import io.vivarium.api.spi.Images;

/**
 * The snapshot registry: records by tenant and tag (a cache of {@link SnapshotStore}), the chain
 * rules of a delete, and what {@code bootable} and {@code warning} say. A tag is reserved by a
 * record {@code writing} before anything is captured; at start-up a record still {@code writing}
 * belongs to a capture the daemon did not finish: its staging is removed and it is marked
 * {@code failed}, so nothing half-written is ever forked.
 */
final class Snapshots {
    private static final System.Logger LOG = System.getLogger(Snapshots.class.getName());
    static final String INTERRUPTED = "the daemon stopped while this snapshot was written; delete it and take it again";

    private final BackendRegistry backends;
    private final Map<String, SnapshotRecord> byKey = new ConcurrentHashMap<>();
    private SnapshotStore store;

    Snapshots(BackendRegistry backends) {
        this.backends = backends;
    }

    /**
     * Loads the records and fails those a crash interrupted; returns them, so that the caller
     * removes the builder sandboxes they name.
     */
    List<SnapshotRecord> open(Path stateDir) throws IOException {
        store = new SnapshotStore(stateDir);
        List<SnapshotRecord> interrupted = new ArrayList<>();
        for (SnapshotRecord r : store.loadAll((file, e) -> LOG.log(Level.ERROR, "unreadable snapshot record " + file
                + " left alone: " + e.getMessage()))) {
            SnapshotRecord loaded = r;
            if (SnapshotInfo.WRITING.equals(r.status())) {
                store.discardStaging(r);
                loaded = r.failed(INTERRUPTED);
                store.save(loaded);
                interrupted.add(r);
                LOG.log(Level.WARNING, "snapshot " + r.tag() + " of tenant " + r.tenant() + " was being written when the "
                        + "daemon stopped: marked failed");
            }
            byKey.put(key(r.tenant(), r.tag()), loaded);
        }
        return interrupted;
    }

    SnapshotStore store() {
        return store;
    }

    private static String key(String tenant, String tag) {
        return tenant + "\u0000" + tag;
    }

    /** Records {@code r} ({@code writing}); {@code taken} is the error when the tag exists. */
    synchronized void reserve(SnapshotRecord r, ApiException taken) {
        if (byKey.containsKey(key(r.tenant(), r.tag()))) {
            throw taken;
        }
        try {
            if (!store.create(r)) {
                throw taken;
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot write the record of snapshot " + r.tag(), e);
        }
        byKey.put(key(r.tenant(), r.tag()), r);
    }

    void save(SnapshotRecord r) {
        try {
            store.save(r);
        } catch (IOException e) {
            throw ApiException.internal("cannot write the record of snapshot " + r.tag(), e);
        }
        byKey.put(key(r.tenant(), r.tag()), r);
    }

    /** Removes the snapshot's record and files; what cannot be removed is logged, the tag is free again. */
    synchronized void remove(SnapshotRecord r) {
        try {
            store.remove(r);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot remove the files of snapshot " + r.tag() + ": " + e.getMessage());
        }
        byKey.remove(key(r.tenant(), r.tag()));
    }

    SnapshotRecord find(Caller caller, String tag) {
        SnapshotTags.check("tag", tag);
        return lookup(caller.tenant(), tag).orElseThrow(() -> notFound(tag));
    }

    Optional<SnapshotRecord> lookup(String tenant, String tag) {
        return Optional.ofNullable(byKey.get(key(tenant, tag)));
    }

    static ApiException notFound(String tag) {
        return ApiException.notFound("no snapshot " + tag + "; GET /v1/snapshots lists yours");
    }

    List<SnapshotInfo> list(Caller caller) {
        return byKey.values().stream().filter(r -> r.tenant().equals(caller.tenant()))
                .sorted(Comparator.comparingLong(SnapshotRecord::createdAtUnix).thenComparing(SnapshotRecord::tag))
                .map(this::info).toList();
    }

    /** Tags whose parent is {@code r}, sorted. */
    List<String> dependents(SnapshotRecord r) {
        return byKey.values().stream().filter(d -> d.tenant().equals(r.tenant()) && r.tag().equals(d.parentTag()))
                .map(SnapshotRecord::tag).sorted().toList();
    }

    /**
     * Deletes {@code tag} by the chain rules: 409 naming every dependent unless {@code cascade}
     * (the whole subtree, leaves first) or {@code force} (dependents orphaned); both is a 400.
     * Sandboxes forked from it keep running: each has its own copy.
     */
    synchronized void delete(Caller caller, String tag, boolean cascade, boolean force) {
        if (cascade && force) {
            throw ApiException.badRequest("cascade and force exclude each other: ?cascade=true deletes the subtree, "
                    + "?force=true orphans the dependents; choose one");
        }
        SnapshotRecord r = find(caller, tag);
        List<String> dependents = dependents(r);
        if (!dependents.isEmpty() && !cascade && !force) {
            throw ApiException.conflict("snapshot `" + tag + "` is the parent of " + dependents.size()
                    + " chained snapshot(s): " + dependents + "; rerun with `?cascade=true` to delete the whole subtree, "
                    + "or `?force=true` to orphan the children (they keep their own files but lose their parent)");
        }
        if (SnapshotInfo.WRITING.equals(r.status())) {
            throw ApiException.conflict("snapshot " + tag + " is being written; delete it when GET /v1/snapshots "
                    + "shows it ready or failed");
        }
        if (cascade) {
            for (String d : dependents) {
                delete(caller, d, true, false);
            }
        }
        remove(r);
    }

    SnapshotInfo info(SnapshotRecord r) {
        String warning = warning(r);
        return new SnapshotInfo(r.tag(), store.dirOf(r.tenant(), r.tag()).toString(), r.createdAtUnix(), r.backend(),
                r.branchedFrom(), r.pauseMs(), r.status(), warning == null, warning, r.captures(), r.parentTag());
    }

    SnapshotInfoDetail detail(SnapshotRecord r) {
        SnapshotInfo i = info(r);
        long[] sizes;
        try {
            sizes = store.sizes(r);
        } catch (IOException e) {
            throw ApiException.internal("cannot measure snapshot " + r.tag() + ": " + e.getMessage(), e);
        }
        List<String> ancestors = new ArrayList<>();
        Optional<SnapshotRecord> parent = Optional.ofNullable(r.parentTag()).flatMap(p -> lookup(r.tenant(), p));
        while (parent.isPresent() && !ancestors.contains(parent.get().tag()) && ancestors.size() < 64) {
            ancestors.add(0, parent.get().tag());
            parent = Optional.ofNullable(parent.get().parentTag()).flatMap(p -> lookup(r.tenant(), p));
        }
        return new SnapshotInfoDetail(i.tag(), i.dir(), i.createdAtUnix(), i.backend(), i.branchedFrom(), i.pauseMs(),
                i.status(), i.bootable(), i.warning(), i.captures(), sizes[0], sizes[1], 0, 0, r.parentTag(), null,
                ancestors.size(),
                ancestors, dependents(r));
    }

    /** Why {@code r} cannot be forked now, or null: not ready, backend away, or an artifact missing. */
    String warning(SnapshotRecord r) {
        if (SnapshotInfo.WRITING.equals(r.status())) {
            return "snapshot " + r.tag() + " is still being written";
        }
        if (SnapshotInfo.FAILED.equals(r.status())) {
            return r.warning() == null ? "writing snapshot " + r.tag() + " failed" : r.warning();
        }
        Optional<BackendRegistry.Entry> e = backends.get(r.backend());
        if (e.isEmpty()) {
            return "backend " + r.backend() + " that forks snapshot " + r.tag() + " is not installed";
        }
        if (!(e.get().backend() instanceof Images images)) {
            return "backend " + r.backend() + " cannot fork snapshots";
        }
        return images.missingArtifact(store.imageOf(r));
    }

    static long now() {
        return Instant.now().getEpochSecond();
    }
}
