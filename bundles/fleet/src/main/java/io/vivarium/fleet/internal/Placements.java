package io.vivarium.fleet.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongSupplier;

import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.spi.HeldImage;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;
import io.vivarium.common.ports.PortTokens;

/**
 * Which node each placed sandbox runs on, kept in the master's store. Written after the node
 * created the sandbox and removed after it deleted it; a crash between the two is mended by
 * {@link #reconcile}, which takes a node's own list as the truth whenever it (re)connects: a
 * sandbox the master has no placement for is adopted, a placement whose sandbox is gone is dropped.
 */
final class Placements {
    private static final System.Logger LOG = System.getLogger(Placements.class.getName());

    private final StateStore store;
    /** The master's clock, in seconds since the epoch. */
    private final LongSupplier nowUnix;

    Placements(StateStore store) {
        this(store, () -> Instant.now().getEpochSecond());
    }

    Placements(StateStore store, LongSupplier nowUnix) {
        this.store = store;
        this.nowUnix = nowUnix;
    }

    private Placement placement(String node, SandboxInfo info) {
        return placement(node, info, null);
    }

    private Placement placement(String node, SandboxInfo info, Map<Integer, String> ports) {
        return new Placement(info.id(), node, info.tenant(), info, nowUnix.getAsLong(), ports);
    }

    Optional<Placement> of(String sandbox) {
        if (!io.vivarium.api.state.RecordCollection.isKey(sandbox)) {
            return Optional.empty();
        }
        return store.get(FleetCollections.PLACEMENTS, sandbox).map(Stored::body);
    }

    List<Placement> all() {
        return store.all(FleetCollections.PLACEMENTS).stream().map(Stored::body).toList();
    }

    /**
     * Records (or refreshes) where a sandbox runs; the ports it exposes on the same node stay exposed.
     * Placements do not await the disk (Transaction#withoutAwaitingDurability): one that a crash of
     * the database's host loses, the node's next reconciliation adopts again.
     */
    void put(String node, SandboxInfo info) throws IOException {
        for (int attempt = 1;; attempt++) {
            Optional<Stored<Placement>> now = store.get(FleetCollections.PLACEMENTS, info.id());
            Map<Integer, String> ports = now.filter(s -> s.body().node().equals(node)).map(s -> s.body().ports()).orElse(null);
            try {
                store.commit(new Transaction().put(FleetCollections.PLACEMENTS, info.id(), placement(node, info, ports),
                        now.map(Stored::revision).orElse(Stored.ABSENT)).withoutAwaitingDurability());
                return;
            } catch (StaleRevisionException e) {
                if (attempt == 3) {
                    throw e;
                }
                // a reconciliation adopted it meanwhile: write over what it wrote
            }
        }
    }

    /** Records where the children of a fork run, all at once, not awaiting the disk ({@link #put}). */
    void putAll(String node, List<SandboxInfo> children) throws IOException {
        Transaction tx = new Transaction();
        for (SandboxInfo info : children) {
            long revision = store.get(FleetCollections.PLACEMENTS, info.id()).map(Stored::revision).orElse(Stored.ABSENT);
            tx.put(FleetCollections.PLACEMENTS, info.id(), placement(node, info), revision);
        }
        store.commit(tx.withoutAwaitingDurability());
    }

    /**
     * The nonce of the master's tokens for {@code port} of a placed sandbox: the one it has, or a new
     * one recorded now; empty when the sandbox is no longer placed.
     */
    Optional<String> portNonce(String sandbox, int port) throws IOException {
        return update(sandbox, p -> p.ports().containsKey(port) ? p : p.withPort(port, PortTokens.nonce()))
                .map(p -> p.ports().get(port));
    }

    /** Forgets the nonce of {@code port} of a placed sandbox: the master's tokens for it stop working. */
    void closePort(String sandbox, int port) throws IOException {
        update(sandbox, p -> p.withoutPort(port));
    }

    /**
     * Rewrites a placement by {@code change}, compare-and-set (a refresh meanwhile is looked at again),
     * writing nothing when the change changes nothing; empty when the sandbox is not placed.
     */
    private Optional<Placement> update(String sandbox, java.util.function.UnaryOperator<Placement> change) throws IOException {
        while (true) {
            Optional<Stored<Placement>> now = store.get(FleetCollections.PLACEMENTS, sandbox);
            if (now.isEmpty()) {
                return Optional.empty();
            }
            Placement changed = change.apply(now.get().body());
            if (changed.equals(now.get().body())) {
                return Optional.of(changed);
            }
            try {
                store.put(FleetCollections.PLACEMENTS, sandbox, changed, now.get().revision());
                return Optional.of(changed);
            } catch (StaleRevisionException e) {
                // refreshed or given another port meanwhile: look again
            }
        }
    }

    /** The node that holds a tenant's snapshot tag, if a node does. */
    Optional<TagPlacement> tag(String tenant, String tag) {
        return tag == null ? Optional.empty() : store.get(FleetCollections.TAGS, TagPlacement.key(tenant, tag)).map(Stored::body);
    }

    void putTag(String tenant, String tag, String node) throws IOException {
        String key = TagPlacement.key(tenant, tag);
        store.put(FleetCollections.TAGS, key, new TagPlacement(tenant, tag, node, List.of(), nowUnix.getAsLong()),
                store.get(FleetCollections.TAGS, key).map(Stored::revision).orElse(Stored.ABSENT));
    }

    /** Rewrites a tag's placement by {@code change}, compare-and-set: a tag deleted meanwhile is left deleted. */
    void updateTag(String tenant, String tag, java.util.function.UnaryOperator<TagPlacement> change) throws IOException {
        String key = TagPlacement.key(tenant, tag);
        while (true) {
            Optional<Stored<TagPlacement>> now = store.get(FleetCollections.TAGS, key);
            if (now.isEmpty()) {
                return;
            }
            try {
                store.put(FleetCollections.TAGS, key, change.apply(now.get().body()), now.get().revision());
                return;
            } catch (StaleRevisionException e) {
                // another copy was recorded meanwhile: apply the change to what it wrote
            }
        }
    }

    void removeTag(String tenant, String tag) throws IOException {
        store.deleteIfPresent(FleetCollections.TAGS, TagPlacement.key(tenant, tag));
    }

    /**
     * Makes the tag records of {@code node} what the node says it holds, in one transaction: a tag
     * of its own the master has no record of (a branch whose record a crash kept the master from
     * writing) is adopted, a record of a tag it no longer holds is dropped (unless recorded since
     * {@code listedAtUnix}), and so is a copy it no longer holds; a copy of a recorded tag the
     * master did not know of (a fetch the master died in) is recorded. Tags still being written
     * are left for the next round.
     *
     * @return the node's copies of tags the master has no record of: to be deleted on the node
     */
    List<HeldImage> reconcileTags(String node, List<HeldImage> held, long listedAtUnix) throws IOException {
        Map<String, HeldImage> there = new HashMap<>();
        held.stream().filter(h -> !SnapshotInfo.WRITING.equals(h.status()))
                .forEach(h -> there.put(TagPlacement.key(h.tenant(), h.tag()), h));
        Transaction tx = new Transaction();
        int changed = 0;
        for (Stored<TagPlacement> t : store.all(FleetCollections.TAGS)) {
            TagPlacement tp = t.body();
            HeldImage h = there.remove(t.key());
            TagPlacement now = tp;
            if (tp.node().equals(node) && h == null && tp.recordedAtUnix() < listedAtUnix) {
                tx.delete(FleetCollections.TAGS, t.key(), t.revision());
                changed++;
                continue;
            } else if (!tp.node().equals(node) && tp.copies().contains(node) && h == null) {
                now = tp.withoutCopy(node);
            } else if (!tp.node().equals(node) && !tp.copies().contains(node) && h != null && h.copy()) {
                now = tp.withCopy(node);
            } else if (!tp.node().equals(node) && h != null && !h.copy()) {
                LOG.log(Level.WARNING, "node " + node + " holds a tag " + tp.tag() + " of tenant " + tp.tenant()
                        + " of its own, but the master records it on node " + tp.node() + "; left alone");
            }
            if (!now.equals(tp)) {
                tx.put(FleetCollections.TAGS, t.key(), now, t.revision());
                changed++;
            }
        }
        List<HeldImage> orphans = new ArrayList<>();
        for (Map.Entry<String, HeldImage> e : there.entrySet()) {
            HeldImage h = e.getValue();
            if (h.copy()) {
                orphans.add(h);
            } else {
                tx.put(FleetCollections.TAGS, e.getKey(), new TagPlacement(h.tenant(), h.tag(), node, List.of(), listedAtUnix),
                        Stored.ABSENT);
                changed++;
            }
        }
        if (changed > 0) {
            store.commit(tx);
            LOG.log(Level.INFO, "node " + node + "'s tags reconciled: " + changed + " record(s) written");
        }
        return orphans;
    }

    void remove(String sandbox) throws IOException {
        store.deleteIfPresent(FleetCollections.PLACEMENTS, sandbox);
    }

    /**
     * Makes the placements of {@code node} what the node says it runs, in one transaction. A
     * placement recorded since {@code listedAtUnix} (the second before the node was asked, by the
     * master's clock) is kept though the list lacks it: a create that raced the question.
     */
    void reconcile(String node, List<SandboxInfo> running, long listedAtUnix) throws IOException {
        Map<String, SandboxInfo> there = new HashMap<>();
        running.forEach(s -> there.put(s.id(), s));
        Transaction tx = new Transaction();
        int adopted = 0;
        int dropped = 0;
        int refreshed = 0;
        for (Stored<Placement> p : store.all(FleetCollections.PLACEMENTS)) {
            if (!p.body().node().equals(node)) {
                there.remove(p.key()); // placed elsewhere: that node's reconciliation decides
                continue;
            }
            SandboxInfo info = there.remove(p.key());
            if (info == null) {
                if (p.body().recordedAtUnix() >= listedAtUnix) {
                    continue;
                }
                tx.delete(FleetCollections.PLACEMENTS, p.key(), p.revision());
                dropped++;
            } else if (!info.equals(p.body().last())) {
                tx.put(FleetCollections.PLACEMENTS, p.key(), p.body().withLast(info), p.revision());
                refreshed++;
            }
        }
        for (SandboxInfo info : there.values()) {
            tx.put(FleetCollections.PLACEMENTS, info.id(), placement(node, info), Stored.ABSENT);
            adopted++;
        }
        if (adopted + dropped + refreshed > 0) {
            store.commit(tx);
        }
        if (adopted + dropped > 0) {
            LOG.log(Level.INFO, "node " + node + " reconciled: " + adopted + " sandbox(es) adopted, " + dropped
                    + " placement(s) of sandboxes no longer there dropped");
        }
    }
}
