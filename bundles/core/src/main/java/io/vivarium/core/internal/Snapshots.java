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
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotInfoDetail;
import io.vivarium.api.spi.Images;
import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;

/**
 * The snapshot registry: records by tenant and tag in the state store's {@code snapshots}
 * collection (its cache serves the reads), images in {@link SnapshotImages}, the chain rules of a
 * delete, and what {@code bootable} and {@code warning} say. A tag is reserved by a record
 * {@code writing} before anything is captured; at start-up a record still {@code writing} belongs to
 * a capture the daemon did not finish: its staging is removed and it is marked {@code failed}, so
 * nothing half-written is ever forked. Dependents are not stored: they are the records whose
 * {@code parentTag} names a snapshot. Every write is compare-and-set on the revisions read, and a
 * write that spans records (a branch and its parent, a delete and the subtree or orphans) is one
 * transaction, so no record ever names a parent that is gone. Writes that create or remove a
 * snapshot's directory hold this object's lock, so a reserve never meets the files of a delete of
 * the same tag still being removed. A node sees only the records it wrote ({@link Stored#node()}):
 * another node's image is on that node's host, so its record is never listed, forked, deleted or
 * recovered here, though its tag stays taken (a key names one record whatever its node).
 */
final class Snapshots {
    private static final System.Logger LOG = System.getLogger(Snapshots.class.getName());
    static final String INTERRUPTED = "the daemon stopped while this snapshot was written; delete it and take it again";

    private final BackendRegistry backends;
    private volatile StateStore state;
    private volatile SnapshotImages images;

    Snapshots(BackendRegistry backends) {
        this.backends = backends;
    }

    /**
     * Migrates the records an older daemon wrote beside the images into {@code state}, removes
     * snapshot directories without a record (a create or delete cut short), and fails the records
     * a crash interrupted; returns those, so that the caller removes the builder sandboxes they name.
     */
    List<SnapshotRecord> open(StateStore state, Path stateDir) throws IOException {
        this.state = state;
        images = new SnapshotImages(stateDir);
        for (Map.Entry<String, Path> dir : images.dirsByKey().entrySet()) {
            Optional<SnapshotRecord> legacy;
            try {
                legacy = images.legacyRecord(dir.getValue());
            } catch (IOException e) {
                LOG.log(Level.ERROR, "unreadable snapshot record in " + dir.getValue() + " left alone: " + e.getMessage());
                continue;
            }
            if (legacy.isPresent()) {
                migrate(dir.getKey(), dir.getValue(), legacy.get());
            } else if (state.get(StateCollections.SNAPSHOTS, dir.getKey()).filter(this::local).isEmpty()) {
                images.remove(dir.getValue());
            }
        }
        List<SnapshotRecord> interrupted = new ArrayList<>();
        for (Stored<SnapshotRecord> s : localRecords()) {
            SnapshotRecord r = s.body();
            if (SnapshotInfo.WRITING.equals(r.status()) && r.copy()) {
                state.commit(new Transaction().delete(StateCollections.SNAPSHOTS, s.key(), s.revision()));
                images.remove(r);
                LOG.log(Level.WARNING, "the copy of snapshot " + r.tag() + " of tenant " + r.tenant() + " was being received "
                        + "when the daemon stopped: removed (it is fetched again when a fork needs it)");
            } else if (SnapshotInfo.WRITING.equals(r.status())) {
                images.discardStaging(r);
                state.put(StateCollections.SNAPSHOTS, s.key(), r.failed(INTERRUPTED), s.revision());
                interrupted.add(r);
                LOG.log(Level.WARNING, "snapshot " + r.tag() + " of tenant " + r.tenant() + " was being written when the "
                        + "daemon stopped: marked failed");
            }
        }
        return interrupted;
    }

    /** Puts a record written before the state store into it (unless a migration cut short already did), then drops the old file. */
    private void migrate(String key, Path dir, SnapshotRecord r) throws IOException {
        if (!SnapshotTags.key(r.tenant(), r.tag()).equals(key)) {
            LOG.log(Level.ERROR, "snapshot record in " + dir + " names tenant " + r.tenant() + " and tag " + r.tag()
                    + ", not its directory; left alone");
            return;
        }
        if (state.get(StateCollections.SNAPSHOTS, key).isEmpty()) {
            state.put(StateCollections.SNAPSHOTS, key, r, Stored.ABSENT);
        }
        images.removeLegacyRecord(dir);
        LOG.log(Level.INFO, "moved the record of snapshot " + r.tag() + " of tenant " + r.tenant() + " into the state store");
    }

    SnapshotImages images() {
        return images;
    }

    private static String key(SnapshotRecord r) {
        String key = SnapshotTags.key(r.tenant(), r.tag());
        if (!RecordCollection.isKey(key)) {
            throw ApiException.badRequest("tenant " + r.tenant() + " has a name too long to hold snapshots (at most 64 "
                    + "bytes of UTF-8); give it a shorter name in the token file");
        }
        return key;
    }

    private Optional<Stored<SnapshotRecord>> stored(String tenant, String tag) {
        String key = SnapshotTags.key(tenant, tag);
        return RecordCollection.isKey(key) ? state.get(StateCollections.SNAPSHOTS, key).filter(this::local)
                : Optional.empty();
    }

    private boolean local(Stored<?> s) {
        return s.node().equals(state.node());
    }

    private List<Stored<SnapshotRecord>> localRecords() {
        return state.all(StateCollections.SNAPSHOTS).stream().filter(this::local).toList();
    }

    /**
     * Records {@code r} ({@code writing}) and creates its directory; {@code taken} is the error when
     * the tag exists. A record with a parent rewrites the parent unchanged in the same transaction,
     * so a delete of the parent that read it before fails instead of leaving this one dangling.
     */
    synchronized void reserve(SnapshotRecord r, ApiException taken) {
        String key = key(r);
        Optional<Stored<SnapshotRecord>> held = state.get(StateCollections.SNAPSHOTS, key);
        if (held.isPresent() && !local(held.get())) {
            throw ApiException.conflict("snapshot " + r.tag() + " exists on node " + held.get().node() + ", not on this "
                    + "one (" + state.node() + "); choose another tag");
        }
        if (held.isPresent()) {
            throw taken;
        }
        Transaction tx = new Transaction().put(StateCollections.SNAPSHOTS, key, r, Stored.ABSENT);
        if (r.parentTag() != null) {
            Stored<SnapshotRecord> parent = stored(r.tenant(), r.parentTag()).orElseThrow(() -> parentGone(r));
            tx.put(StateCollections.SNAPSHOTS, parent.key(), parent.body(), parent.revision());
        }
        commit(tx, r.tag(), () -> state.get(StateCollections.SNAPSHOTS, key).isPresent() ? taken : parentGone(r));
        try {
            images.create(r);
        } catch (IOException e) {
            discard(r);
            throw ApiException.internal("cannot create the directory of snapshot " + r.tag() + ": " + e.getMessage(), e);
        }
    }

    private static ApiException parentGone(SnapshotRecord r) {
        return ApiException.conflict("snapshot " + r.parentTag() + ", the parent of " + r.tag() + ", was deleted or "
                + "changed meanwhile; nothing was written: branch again");
    }

    /** Rewrites {@code from} as {@code to}, only if the store still holds {@code from}: 409 if another request changed or deleted it. */
    void update(SnapshotRecord from, SnapshotRecord to) {
        Stored<SnapshotRecord> now = stored(from.tenant(), from.tag()).filter(s -> s.body().equals(from))
                .orElseThrow(() -> changed(from.tag()));
        commit(new Transaction().put(StateCollections.SNAPSHOTS, now.key(), to, now.revision()), from.tag(),
                () -> changed(from.tag()));
    }

    private static ApiException changed(String tag) {
        return ApiException.conflict("snapshot " + tag + " was changed or deleted by another request meanwhile; nothing "
                + "was written: GET /v1/snapshots/" + tag + "/info and retry");
    }

    private void commit(Transaction tx, String tag, Supplier<ApiException> onStale) {
        try {
            state.commit(tx);
        } catch (StaleRevisionException e) {
            ApiException conflict = onStale.get();
            conflict.addSuppressed(e);
            throw conflict;
        } catch (IOException e) {
            throw ApiException.internal("cannot write the record of snapshot " + tag, e);
        }
    }

    /** Removes a snapshot a capture did not finish, its record and files; what cannot be removed is logged. */
    synchronized void discard(SnapshotRecord r) {
        try {
            state.deleteIfPresent(StateCollections.SNAPSHOTS, key(r));
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot remove the record of snapshot " + r.tag() + ": " + e.getMessage());
        }
        removeFiles(r);
    }

    private void removeFiles(SnapshotRecord r) {
        try {
            images.remove(r);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot remove the files of snapshot " + r.tag() + " (the next start does): "
                    + e.getMessage());
        }
    }

    SnapshotRecord find(Caller caller, String tag) {
        return findStored(caller, tag).body();
    }

    private Stored<SnapshotRecord> findStored(Caller caller, String tag) {
        SnapshotTags.check("tag", tag);
        return stored(caller.tenant(), tag).orElseThrow(() -> notFound(tag));
    }

    Optional<SnapshotRecord> lookup(String tenant, String tag) {
        return stored(tenant, tag).map(Stored::body);
    }

    static ApiException notFound(String tag) {
        return ApiException.notFound("no snapshot " + tag + "; GET /v1/snapshots lists yours");
    }

    List<SnapshotInfo> list(Caller caller) {
        return localRecords().stream().map(Stored::body)
                .filter(r -> r.tenant().equals(caller.tenant()))
                .sorted(Comparator.comparingLong(SnapshotRecord::createdAtUnix).thenComparing(SnapshotRecord::tag))
                .map(this::info).toList();
    }

    /** This node's records, of every tenant. */
    List<SnapshotRecord> all() {
        return localRecords().stream().map(Stored::body).toList();
    }

    /** Tags whose parent is {@code r}, sorted. */
    List<String> dependents(SnapshotRecord r) {
        return children(r).stream().map(s -> s.body().tag()).toList();
    }

    private List<Stored<SnapshotRecord>> children(SnapshotRecord r) {
        return localRecords().stream()
                .filter(d -> d.body().tenant().equals(r.tenant()) && r.tag().equals(d.body().parentTag()))
                .sorted(Comparator.comparing(d -> d.body().tag())).toList();
    }

    /**
     * Deletes {@code tag} by the chain rules: 409 naming every dependent unless {@code cascade}
     * (the whole subtree) or {@code force} (dependents orphaned: their {@code parent_tag} cleared);
     * both is a 400. One transaction on the revisions read, so a concurrent delete, branch or
     * rewrite of any record involved makes this one a 409 that wrote nothing. Sandboxes forked from
     * it keep running: each has its own copy.
     */
    void delete(Caller caller, String tag, boolean cascade, boolean force) {
        deletion(caller, tag, cascade, force).run();
    }

    /** What {@link #delete} decides from the records as read now, to be committed by running it. */
    Runnable deletion(Caller caller, String tag, boolean cascade, boolean force) {
        if (cascade && force) {
            throw ApiException.badRequest("cascade and force exclude each other: ?cascade=true deletes the subtree, "
                    + "?force=true orphans the dependents; choose one");
        }
        Stored<SnapshotRecord> target = findStored(caller, tag);
        List<Stored<SnapshotRecord>> children = children(target.body());
        if (!children.isEmpty() && !cascade && !force) {
            throw ApiException.conflict("snapshot `" + tag + "` is the parent of " + children.size()
                    + " chained snapshot(s): " + dependents(target.body()) + "; rerun with `?cascade=true` to delete the "
                    + "whole subtree, or `?force=true` to orphan the children (they keep their own files but lose their "
                    + "parent)");
        }
        List<Stored<SnapshotRecord>> doomed = new ArrayList<>(List.of(target));
        for (int i = 0; cascade && i < doomed.size(); i++) {
            children(doomed.get(i).body()).stream().filter(c -> !doomed.contains(c)).forEach(doomed::add);
        }
        Transaction tx = new Transaction();
        for (Stored<SnapshotRecord> d : doomed) {
            if (SnapshotInfo.WRITING.equals(d.body().status())) {
                throw ApiException.conflict("snapshot " + d.body().tag() + " is being written; delete " + tag
                        + " when GET /v1/snapshots shows it ready or failed");
            }
            tx.delete(StateCollections.SNAPSHOTS, d.key(), d.revision());
        }
        if (force) {
            children.forEach(c -> tx.put(StateCollections.SNAPSHOTS, c.key(), c.body().orphaned(), c.revision()));
        }
        return () -> {
            synchronized (this) {
                commit(tx, tag, () -> ApiException.conflict("snapshot " + tag + " or a snapshot chained to it was "
                        + "deleted, branched or rewritten by another request meanwhile; nothing was deleted: GET /v1/snapshots/"
                        + tag + "/info and retry"));
                doomed.forEach(d -> removeFiles(d.body()));
            }
        };
    }

    SnapshotInfo info(SnapshotRecord r) {
        String warning = warning(r);
        return new SnapshotInfo(r.tag(), images.dirOf(r.tenant(), r.tag()).toString(), r.createdAtUnix(), r.backend(),
                r.branchedFrom(), r.pauseMs(), r.status(), warning == null, warning, r.captures(), r.parentTag(), r.template());
    }

    SnapshotInfoDetail detail(SnapshotRecord r) {
        SnapshotInfo i = info(r);
        long[] sizes;
        try {
            sizes = images.sizes(r);
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
                ancestors, dependents(r), r.template());
    }

    /** Why {@code r} cannot be forked now, or null: not ready, backend away, or an artifact missing. */
    String warning(SnapshotRecord r) {
        if (SnapshotInfo.WRITING.equals(r.status())) {
            return "snapshot " + r.tag() + " is still being written";
        }
        if (SnapshotInfo.FAILED.equals(r.status())) {
            return r.warning() == null ? "writing snapshot " + r.tag() + " failed" : r.warning();
        }
        return unforkable(r.backend(), r.tag(), images.imageOf(r));
    }

    /**
     * Why an image of {@code backend} in {@code imageDir} cannot be forked on this daemon, or null:
     * the backend is away or makes no images, or an artifact is missing ({@code imageDir} null: the
     * backend alone is checked).
     */
    String unforkable(String backend, String tag, Path imageDir) {
        Optional<BackendRegistry.Entry> e = backends.get(backend);
        if (e.isEmpty()) {
            return "backend " + backend + " that forks snapshot " + tag + " is not installed";
        }
        Optional<Images> images = e.get().seam(Images.class);
        if (images.isEmpty()) {
            return "backend " + backend + " cannot fork snapshots";
        }
        return imageDir == null ? null : images.get().missingArtifact(imageDir);
    }

    static long now() {
        return Instant.now().getEpochSecond();
    }
}
