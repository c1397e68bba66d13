package io.vivarium.fleet.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.BranchRequest;
import io.vivarium.api.Caller;
import io.vivarium.api.CompactRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotInfoDetail;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.common.testpoints.TestPoints;
import io.vivarium.fleet.internal.Forwarding.Remote;

/**
 * The snapshot service as the master serves it: a tag lives on the node it was built or branched
 * on (its info and compaction go there); a fork's children go, each one, to the least loaded node
 * whose host fingerprint is the holder's, which fetches the image first if it lacks it
 * ({@link ImageMoves}), or to a node that holds it when the image cannot move (all or none); a delete drops the copies,
 * then the tag. A branch or touch of a placed sandbox goes to its node. Tags of this daemon's own
 * are core's, as before.
 */
final class FleetSnapshots implements SnapshotService {
    private static final System.Logger LOG = System.getLogger(FleetSnapshots.class.getName());
    private final SnapshotService local;
    private final Nodes nodes;
    private final Placements placements;
    private final Forwarding forwarding;
    private final ImageMoves moves;

    FleetSnapshots(SnapshotService local, Nodes nodes, Placements placements, Forwarding forwarding,
            Supplier<RuntimeObserver> observer) {
        this.local = local;
        this.nodes = nodes;
        this.placements = placements;
        this.forwarding = forwarding;
        this.moves = new ImageMoves(nodes, placements, forwarding, observer);
    }

    @Override
    public SnapshotInfo build(Caller caller, SnapshotRequest request) {
        if (!nodes.any()) {
            return local.build(caller, request);
        }
        String node = nodes.pick();
        SnapshotInfo built = forwarding.call(node, "POST", "/v1/snapshots", caller, request, SnapshotInfo.class);
        recordTag(caller, built.tag(), node);
        return built;
    }

    @Override
    public List<SnapshotInfo> snapshots(Caller caller) {
        List<SnapshotInfo> all = new ArrayList<>(local.snapshots(caller));
        forwarding.listParts(nodes.ids(), "/v1/snapshots", caller, SnapshotInfo[].class).forEach((node, there) -> {
            if (there != null) {
                Arrays.stream(there).filter(t -> node.equals(nodeOf(caller, t.tag()))).forEach(all::add); // not the copies
            }
        });
        return all;
    }

    @Override
    public SnapshotInfoDetail info(Caller caller, String tag) {
        String node = nodeOf(caller, tag);
        return node == null ? local.info(caller, tag)
                : forwarding.call(node, "GET", tagPath(tag) + "/info", caller, null, SnapshotInfoDetail.class);
    }

    /**
     * Deletes a placed tag by the chain rules on every node that holds it: 409 naming the
     * dependents each node has unless {@code cascade} (their subtrees go first, each with its
     * copies) or {@code force}; then the copies, each node forgetting its own, then the holder's.
     */
    @Override
    public void deleteSnapshot(Caller caller, String tag, boolean cascade, boolean force) {
        TagPlacement tp = placements.tag(caller.tenant(), tag).orElse(null);
        if (tp == null) {
            local.deleteSnapshot(caller, tag, cascade, force);
            return;
        }
        if (cascade && force) {
            local.deleteSnapshot(caller, tag, true, true); // core's 400, the same words on every daemon
        }
        // a copy on a revoked node is not asked for: the node drops it (as a copy of a tag the master
        // has no record of) when it is added again
        List<String> copies = tp.copies().stream().filter(c -> !nodes.revoked(c)).toList();
        List<String> holders = new ArrayList<>(copies);
        holders.add(tp.node());
        Set<String> dependents = new TreeSet<>();
        for (String node : holders) {
            dependents.addAll(forwarding.call(node, "GET", tagPath(tag) + "/info", caller, null, SnapshotInfoDetail.class)
                    .dependents());
        }
        if (!dependents.isEmpty() && !cascade && !force) {
            throw ApiException.conflict("snapshot `" + tag + "` is the parent of " + dependents.size() + " chained snapshot(s): "
                    + dependents + "; rerun with `?cascade=true` to delete the whole subtree, or `?force=true` to orphan the "
                    + "children (they keep their own files but lose their parent)");
        }
        if (cascade) {
            dependents.forEach(d -> deleteSnapshot(caller, d, true, false));
        }
        String flags = "?cascade=" + cascade + "&force=" + force;
        for (String copy : tp.copies()) {
            if (copies.contains(copy)) {
                try {
                    forwarding.call(copy, "DELETE", tagPath(tag) + flags, caller, null, null);
                } catch (ApiException e) {
                    if (e.status() != 404) {
                        throw e;
                    }
                }
            }
            forget(() -> placements.updateTag(caller.tenant(), tag, t -> t.withoutCopy(copy)), tag, copy);
        }
        forwarding.call(tp.node(), "DELETE", tagPath(tag) + flags, caller, null, null);
        forget(() -> placements.removeTag(caller.tenant(), tag), tag, tp.node());
    }

    private interface Write {
        void run() throws IOException;
    }

    private static void forget(Write write, String tag, String node) {
        try {
            write.run();
        } catch (IOException e) {
            throw ApiException.internal("snapshot " + tag + " was deleted on node " + node + " but the master could not forget it",
                    e);
        }
    }

    @Override
    public SnapshotInfo compact(Caller caller, String tag, CompactRequest request) {
        String node = nodeOf(caller, tag);
        if (node == null) {
            return local.compact(caller, tag, request);
        }
        SnapshotInfo compacted = forwarding.call(node, "POST", tagPath(tag) + "/compact", caller, request, SnapshotInfo.class);
        recordTag(caller, compacted.tag(), node);
        return compacted;
    }

    @Override
    public List<SandboxInfo> fork(Caller caller, ForkRequest request) {
        TagPlacement tp = request == null ? null : placements.tag(caller.tenant(), request.snapshotTag()).orElse(null);
        if (tp == null && request != null && request.nodeId() != null && nodes.any()) {
            local.info(caller, request.snapshotTag()); // 404 for a tag neither a node nor this daemon holds
            throw ApiException.conflict("node_id: snapshot " + request.snapshotTag() + " is this daemon's own, taken before it "
                    + "drove nodes, so its children run here: leave node_id out");
        }
        if (tp == null) {
            return local.fork(caller, request);
        }
        int n = request.n() == null ? 1 : request.n();
        Map<String, Integer> plan = request.nodeId() != null ? Map.of(namedFor(caller, request, tp), n)
                : n < 1 || n > MAX_FORK ? Map.of(tp.node(), n) // the holder answers why n is wrong
                : spreadFor(caller, request, tp, n);
        Map<String, SideBySide.Outcome<List<SandboxInfo>>> parts = SideBySide.run(plan.keySet(), node -> {
            ForkRequest there = new ForkRequest(request.snapshotTag(), plan.get(node), request.perChildNetns(),
                    request.memoryLimitMib(), request.liveFork(), request.hugepages(), null);
            List<SandboxInfo> children = Arrays.asList(forwarding.call(node, "POST", "/v1/sandboxes", caller, there,
                    SandboxInfo[].class));
            TestPoints.reach("fleet.fork.placed");
            return children;
        });
        Map<String, List<SandboxInfo>> made = new LinkedHashMap<>();
        RuntimeException failed = null;
        for (Map.Entry<String, SideBySide.Outcome<List<SandboxInfo>>> part : parts.entrySet()) {
            if (part.getValue().failure() == null) {
                made.put(part.getKey(), part.getValue().value());
            } else if (failed == null) {
                failed = part.getValue().failure();
            }
        }
        if (failed != null) {
            undo(caller, made, failed);
            throw failed;
        }
        List<SandboxInfo> all = new ArrayList<>();
        try {
            for (Map.Entry<String, List<SandboxInfo>> part : made.entrySet()) {
                placements.putAll(part.getKey(), part.getValue());
                all.addAll(part.getValue());
            }
        } catch (IOException | ApiException e) {
            ApiException unrecorded = ApiException.internal("the master could not record where the children of "
                    + request.snapshotTag() + " run, so the fork was undone: " + e.getMessage(), e);
            undo(caller, made, unrecorded);
            throw unrecorded;
        }
        made.forEach((node, children) -> nodes.counted(node, children.size()));
        return all;
    }

    /**
     * All or none: the children a fork made before one of its parts failed are deleted; one that
     * cannot be is left to the node's next reconciliation, which adopts it.
     */
    private void undo(Caller caller, Map<String, List<SandboxInfo>> made, RuntimeException why) {
        made.forEach((node, children) -> {
            for (SandboxInfo child : children) {
                try {
                    forwarding.call(node, "DELETE", "/v1/sandboxes/" + Forwarding.segment(child.id()), caller, null, null);
                    placements.remove(child.id());
                } catch (ApiException | IOException e) {
                    LOG.log(Level.WARNING, "child " + child.id() + " of a fork that failed (" + why.getMessage() + ") is kept on node "
                            + node + ": " + e.getMessage() + "; delete it, or the node's next reconciliation adopts it");
                }
            }
        });
    }

    /**
     * A fork of {@code n} children shared, child by child, among the least loaded nodes whose host
     * fingerprint is the holder's, those that lack the image fetching it first, side by side; the
     * share of a node the image cannot be brought to goes to the least loaded nodes that hold it.
     */
    private Map<String, Integer> spreadFor(Caller caller, ForkRequest request, TagPlacement tp, int n) {
        HostFingerprint fingerprint = nodes.fingerprint(tp.node());
        Map<String, Integer> planned = nodes.spread(id -> Objects.equals(nodes.fingerprint(id), fingerprint), n, Map.of(),
                " with the host of node " + tp.node());
        Map<String, SideBySide.Outcome<Boolean>> brought = SideBySide.run(planned.keySet(), node -> {
            moves.bring(caller, request.snapshotTag(), node);
            return true;
        });
        Map<String, Integer> plan = new LinkedHashMap<>();
        int stranded = 0;
        ApiException cannotMove = null;
        for (Map.Entry<String, Integer> part : planned.entrySet()) {
            RuntimeException failure = brought.get(part.getKey()).failure();
            if (failure == null) {
                plan.put(part.getKey(), part.getValue());
            } else if (failure instanceof ApiException e && e.status() != 404) {
                LOG.log(Level.INFO, "forking " + part.getValue() + " of " + request.snapshotTag() + " where its image is, not on node "
                        + part.getKey() + ": " + e.getMessage());
                stranded += part.getValue();
                cannotMove = e;
            } else {
                throw failure;
            }
        }
        if (stranded > 0) {
            TagPlacement now = placements.tag(caller.tenant(), request.snapshotTag()).orElse(tp);
            try {
                nodes.spread(now::heldBy, stranded, plan, " that holds " + request.snapshotTag())
                        .forEach((node, k) -> plan.merge(node, k, Integer::sum));
            } catch (ApiException none) {
                none.addSuppressed(cannotMove);
                throw none;
            }
        }
        return plan;
    }

    /** The node a fork names: 409 if its host differs from the holder's or the image cannot be fetched to it. */
    private String namedFor(Caller caller, ForkRequest request, TagPlacement tp) {
        String named = nodes.named(request.nodeId());
        HostFingerprint theirs = nodes.fingerprint(named);
        HostFingerprint tags = nodes.fingerprint(tp.node());
        if (theirs != null && !theirs.equals(tags)) {
            throw ApiException.conflict("node_id: node " + named + "'s host (fingerprint " + theirs.fp8() + ") differs from node "
                    + tp.node() + "'s (" + (tags == null ? "unknown" : tags.fp8()) + "), which holds " + request.snapshotTag()
                    + ": it cannot run that image");
        }
        try {
            moves.bring(caller, request.snapshotTag(), named);
        } catch (ApiException e) {
            throw new ApiException(e.status() == 503 ? 503 : 409, "node_id: the image of " + request.snapshotTag()
                    + " cannot be fetched to node " + named + ": " + e.getMessage(), e.retryAfterSeconds(), e);
        }
        return named;
    }

    @Override
    public SnapshotInfo branch(Caller caller, String id, BranchRequest request) {
        Remote r = forwarding.sandbox(caller, id);
        if (r == null) {
            return local.branch(caller, id, request);
        }
        SnapshotInfo branched = forwarding.call(r, "POST", "/branch", caller, request, SnapshotInfo.class);
        recordTag(caller, branched.tag(), r.node());
        return branched;
    }

    @Override
    public void touch(Caller caller, String id) {
        Remote r = forwarding.sandbox(caller, id);
        if (r == null) {
            local.touch(caller, id);
        } else {
            forwarding.call(r, "POST", "/touch", caller, null, null);
        }
    }

    private String nodeOf(Caller caller, String tag) {
        return placements.tag(caller.tenant(), tag).map(TagPlacement::node).orElse(null);
    }

    private void recordTag(Caller caller, String tag, String node) {
        try {
            placements.putTag(caller.tenant(), tag, node);
        } catch (IOException e) {
            throw ApiException.internal("snapshot " + tag + " was made on node " + node + " but the master could not record where", e);
        }
    }

    private static String tagPath(String tag) {
        return "/v1/snapshots/" + Forwarding.segment(tag);
    }
}
