package io.vivarium.fleet.internal;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

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
import io.vivarium.common.testpoints.TestPoints;
import io.vivarium.fleet.internal.Forwarding.Remote;

/**
 * The snapshot service as the master serves it: a tag lives on the node it was built or branched
 * on, and its forks, info, compaction and delete go to that node (images do not move between
 * nodes yet, so every child of a tag runs where the tag is); a branch or touch of a placed
 * sandbox goes to its node. Tags of this daemon's own are core's, as before.
 */
final class FleetSnapshots implements SnapshotService {
    private final SnapshotService local;
    private final Nodes nodes;
    private final Placements placements;
    private final Forwarding forwarding;

    FleetSnapshots(SnapshotService local, Nodes nodes, Placements placements, Forwarding forwarding) {
        this.local = local;
        this.nodes = nodes;
        this.placements = placements;
        this.forwarding = forwarding;
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
        for (String node : nodes.ids()) {
            SnapshotInfo[] there = nodes.connected(node) ? forwarding.listPart(node, "/v1/snapshots", caller, SnapshotInfo[].class) : null;
            if (there != null) {
                all.addAll(Arrays.asList(there));
            }
        }
        return all;
    }

    @Override
    public SnapshotInfoDetail info(Caller caller, String tag) {
        String node = nodeOf(caller, tag);
        return node == null ? local.info(caller, tag)
                : forwarding.call(node, "GET", tagPath(tag) + "/info", caller, null, SnapshotInfoDetail.class);
    }

    @Override
    public void deleteSnapshot(Caller caller, String tag, boolean cascade, boolean force) {
        String node = nodeOf(caller, tag);
        if (node == null) {
            local.deleteSnapshot(caller, tag, cascade, force);
            return;
        }
        forwarding.call(node, "DELETE", tagPath(tag) + "?cascade=" + cascade + "&force=" + force, caller, null, null);
        try {
            placements.removeTag(caller.tenant(), tag);
        } catch (IOException e) {
            throw ApiException.internal("snapshot " + tag + " was deleted on node " + node + " but the master could not forget it", e);
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
        String node = request == null ? null : nodeOf(caller, request.snapshotTag());
        if (node == null) {
            return local.fork(caller, request);
        }
        if (request.nodeId() != null && !request.nodeId().equals(node)) {
            refuseOtherNode(request, node);
        }
        List<SandboxInfo> children = Arrays.asList(forwarding.call(node, "POST", "/v1/sandboxes", caller, request.onAnyNode(),
                SandboxInfo[].class));
        TestPoints.reach("fleet.fork.placed");
        try {
            placements.putAll(node, children);
        } catch (IOException e) {
            // the node's next reconciliation adopts the children: none is lost
            throw ApiException.internal("the " + children.size() + " children of " + request.snapshotTag() + " run on node " + node
                    + " but the master could not record them yet; they are adopted when the node next connects", e);
        }
        nodes.counted(node, children.size());
        return children;
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

    /** A fork that names another node than the tag's: 409, saying why that node cannot run the tag's image. */
    private void refuseOtherNode(ForkRequest request, String holder) {
        String named = nodes.named(request.nodeId());
        HostFingerprint theirs = nodes.fingerprint(named);
        HostFingerprint tags = nodes.fingerprint(holder);
        if (theirs != null && !theirs.equals(tags)) {
            throw ApiException.conflict("node_id: node " + named + "'s host (fingerprint " + theirs.fp8() + ") differs from node "
                    + holder + "'s (" + (tags == null ? "unknown" : tags.fp8()) + "), which holds " + request.snapshotTag()
                    + ": it cannot run that image");
        }
        throw ApiException.conflict("node_id: the image of " + request.snapshotTag() + " is on node " + holder
                + " and images do not move between nodes yet, so its children run there: leave node_id out or name " + holder);
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
