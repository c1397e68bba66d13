package io.vivarium.fleet.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.BackendInfo;
import io.vivarium.api.BaselineRequest;
import io.vivarium.api.BaselineResult;
import io.vivarium.api.Caller;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.ChangesRequest;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.DryRunRequest;
import io.vivarium.api.DryRunResult;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.Relay;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.common.testpoints.TestPoints;
import io.vivarium.api.spi.RuntimeObserver.CreateOutcome;
import io.vivarium.fleet.internal.Forwarding.Remote;

/**
 * The sandbox service as the master serves it: a sandbox placed on a node is driven through that
 * node's API, with the caller's tenant and role (checked here, at the master: another tenant's
 * sandbox is 404 as on one host); every other sandbox is this daemon's own. While nodes are
 * registered, creates go to the least loaded connected node; without any, to this daemon.
 */
final class FleetSandboxes implements SandboxService {
    private static final System.Logger LOG = System.getLogger(FleetSandboxes.class.getName());
    /** The service property that tells this service from core's, which it wraps. */
    static final String FLEET_PROPERTY = "vivarium.fleet";
    /**
     * The status of a placed sandbox whose node does not answer now: the master's view, never
     * core's (so not a {@code SandboxStatus}); its routes answer 503 until the node is back.
     */
    static final String NODE_DISCONNECTED = "node_disconnected";

    private final SandboxService local;
    private final Nodes nodes;
    private final Placements placements;
    private final Forwarding forwarding;
    private final Supplier<RuntimeObserver> observer;

    FleetSandboxes(SandboxService local, Nodes nodes, Placements placements, Forwarding forwarding,
            Supplier<RuntimeObserver> observer) {
        this.local = local;
        this.nodes = nodes;
        this.placements = placements;
        this.forwarding = forwarding;
        this.observer = observer;
    }

    private Remote remote(Caller caller, String id) {
        return forwarding.sandbox(caller, id);
    }

    @Override
    public SandboxInfo create(Caller caller, CreateSandboxRequest request) {
        if (!nodes.any()) {
            return local.create(caller, request);
        }
        return createOnANode(caller, request, Forwarding.SANDBOXES);
    }

    /** {@link #placeOnANode}, counted as a create by its outcome. */
    SandboxInfo createOnANode(Caller caller, CreateSandboxRequest request, String collection) {
        if (request != null && !request.volumes().isEmpty()) {
            throw ApiException.notImplemented("volumes are kept by the host that made them, and a master places "
                    + "sandboxes on its nodes, which do not share them yet: create sandboxes with volumes on a node's own API");
        }
        try {
            SandboxInfo info = placeOnANode(caller, request, collection);
            observer.get().sandboxCreated(CreateOutcome.OK);
            return info;
        } catch (ApiException e) {
            observer.get().sandboxCreated(e.status() == 503 ? CreateOutcome.REFUSED
                    : e.status() < 500 ? CreateOutcome.INVALID : CreateOutcome.FAILED);
            throw e;
        }
    }

    /**
     * Creates on the node named, else on the least loaded one that has the backend asked for (any
     * node when none is named: each has its own default), through {@code collection}'s create route
     * there, and records where the sandbox runs.
     */
    private SandboxInfo placeOnANode(Caller caller, CreateSandboxRequest request, String collection) {
        String backend = request == null ? null : request.backend();
        String node = request != null && request.nodeId() != null ? nodes.named(request.nodeId())
                : backend == null || backend.isBlank() ? nodes.pick() : nodeWith(backend);
        SandboxInfo info = forwarding.call(node, "POST", collection, caller, request == null ? null : request.onAnyNode(),
                SandboxInfo.class);
        TestPoints.reach("fleet.create.placed");
        try {
            placements.put(node, info);
        } catch (IOException | ApiException e) {
            undoCreate(node, caller, info, e);
            throw e instanceof ApiException a ? a : ApiException.internal("cannot record where sandbox " + info.id() + " runs", e);
        }
        nodes.counted(node, 1);
        return info;
    }

    /** The least loaded node that runs {@code backend}: 400 if no node runs it, 503 if those that do are away or full. */
    private String nodeWith(String backend) {
        java.util.function.Predicate<String> runs = id -> {
            HostFingerprint f = nodes.fingerprint(id);
            return f != null && f.backends().containsKey(backend);
        };
        if (nodes.ids().stream().noneMatch(runs)) {
            throw ApiException.badRequest("backend: no node runs backend " + backend + " (GET /v1/backends lists what the nodes run)");
        }
        return nodes.pick(runs, " with backend " + backend);
    }

    /** A placement that could not be written: the node's sandbox goes, or the next reconciliation adopts it. */
    private void undoCreate(String node, Caller caller, SandboxInfo info, Exception why) {
        try {
            nodes.link(node).call("DELETE", "/v1/sandboxes/" + Forwarding.segment(info.id()), caller, null, null);
        } catch (NodeLink.NodeFailure | ApiException e) {
            LOG.log(Level.WARNING, "sandbox " + info.id() + " on node " + node + " is kept (its placement could not be written: "
                    + why.getMessage() + "); the node's next reconciliation adopts it");
        }
    }

    @Override
    public List<SandboxInfo> list(Caller caller) {
        return listWith(caller, local.list(caller), Forwarding.SANDBOXES, true);
    }

    /**
     * This daemon's part and each node's list at {@code collection}; the placements on a node that
     * does not answer are shown as last known where {@code showUnanswered} (the master does not know
     * which of them are machines: a VM list leaves them out).
     */
    List<SandboxInfo> listWith(Caller caller, List<SandboxInfo> localPart, String collection, boolean showUnanswered) {
        List<SandboxInfo> all = new ArrayList<>(localPart);
        Map<String, List<Placement>> byNode = new LinkedHashMap<>();
        for (Placement p : placements.all()) {
            if (p.tenant().equals(caller.tenant())) {
                byNode.computeIfAbsent(p.node(), k -> new ArrayList<>()).add(p);
            }
        }
        Map<String, SandboxInfo[]> parts = forwarding.listParts(byNodeAndConnected(byNode), collection, caller, SandboxInfo[].class);
        for (Map.Entry<String, SandboxInfo[]> part : parts.entrySet()) {
            String node = part.getKey();
            SandboxInfo[] there = part.getValue();
            if (there != null) {
                all.addAll(Arrays.asList(there));
            } else if (showUnanswered) {
                byNode.getOrDefault(node, List.of()).forEach(p -> all.add(disconnected(p, "the node does not answer the master now")));
            }
        }
        return all;
    }

    /** The nodes a list asks (every one not revoked) and those holding the caller's placements (revoked ones too). */
    private java.util.Set<String> byNodeAndConnected(Map<String, List<Placement>> byNode) {
        java.util.Set<String> asked = new java.util.TreeSet<>(nodes.ids());
        asked.addAll(byNode.keySet());
        return asked;
    }

    /** A sandbox whose node does not answer is shown as last known, saying so; its other routes answer 503. */
    @Override
    public SandboxInfo get(Caller caller, String id) {
        Placement p = placements.of(id).orElse(null);
        if (p != null && p.tenant().equals(caller.tenant()) && !nodes.connected(p.node())) {
            return disconnected(p, "the node does not answer the master now");
        }
        Remote r = remote(caller, id);
        return r == null ? local.get(caller, id) : call(r, "GET", "", caller, null, SandboxInfo.class);
    }

    private static SandboxInfo disconnected(Placement p, String reason) {
        SandboxInfo l = p.last();
        return new SandboxInfo(p.sandbox(), l == null ? null : l.backend(), p.tenant(), NODE_DISCONNECTED,
                l == null ? 0 : l.createdAtUnix(), l == null ? 0 : l.pid(), l == null ? null : l.memoryLimitMib(),
                l == null ? null : l.workspace(), "runs on node " + p.node() + ": " + reason, l == null ? null : l.vcpus(),
                l == null ? null : l.image(), null, l == null ? null : l.snapshotTag());
    }

    @Override
    public void delete(Caller caller, String id) {
        delete(caller, id, false);
    }

    @Override
    public void delete(Caller caller, String id, boolean force) {
        Remote r = remote(caller, id);
        if (r == null) {
            local.delete(caller, id, force);
        } else {
            deleteOnItsNode(r, caller, force);
        }
    }

    /** Deletes a placed sandbox through its route on its node (forcibly where asked), then its placement. */
    void deleteOnItsNode(Remote r, Caller caller, boolean force) {
        String id = r.placement().sandbox();
        try {
            call(r, "DELETE", force ? "?force=true" : "", caller, null, null);
        } catch (ApiException e) {
            if (e.status() == 404 && r.collection().equals(Forwarding.SANDBOXES)) {
                forget(id); // the node has no such sandbox: its placement was a ghost (a VM route's 404 may mean "not a VM")
            }
            throw e;
        }
        try {
            placements.remove(id);
        } catch (IOException e) {
            throw ApiException.internal("sandbox " + id + " was deleted on node " + r.placement().node()
                    + " but its placement could not be removed (the node's next reconciliation drops it)", e);
        }
        nodes.counted(r.placement().node(), -1);
    }

    @Override
    public PingResult ping(Caller caller, String id) {
        Remote r = remote(caller, id);
        return r == null ? local.ping(caller, id) : call(r, "POST", "/ping", caller, null, PingResult.class);
    }

    @Override
    public ExecResult exec(Caller caller, String id, ExecRequest request) {
        Remote r = remote(caller, id);
        return r == null ? local.exec(caller, id, request) : call(r, "POST", "/exec", caller, request, ExecResult.class);
    }

    @Override
    public EvalResult eval(Caller caller, String id, EvalRequest request) {
        Remote r = remote(caller, id);
        return r == null ? local.eval(caller, id, request) : call(r, "POST", "/eval", caller, request, EvalResult.class);
    }

    @Override
    public SandboxInfo pause(Caller caller, String id) {
        Remote r = remote(caller, id);
        return r == null ? local.pause(caller, id) : call(r, "POST", "/pause", caller, null, SandboxInfo.class);
    }

    @Override
    public SandboxInfo resume(Caller caller, String id) {
        Remote r = remote(caller, id);
        return r == null ? local.resume(caller, id) : call(r, "POST", "/resume", caller, null, SandboxInfo.class);
    }

    @Override
    public CheckpointInfo checkpoint(Caller caller, String id, CheckpointRequest request) {
        Remote r = remote(caller, id);
        return r == null ? local.checkpoint(caller, id, request)
                : call(r, "POST", "/checkpoints", caller, request, CheckpointInfo.class);
    }

    @Override
    public SandboxInfo restoreCheckpoint(Caller caller, String id, String tag) {
        Remote r = remote(caller, id);
        return r == null ? local.restoreCheckpoint(caller, id, tag)
                : call(r, "POST", "/checkpoints/" + Forwarding.segment(tag) + "/restore", caller, null, SandboxInfo.class);
    }

    @Override
    public List<CheckpointInfo> checkpoints(Caller caller, String id) {
        Remote r = remote(caller, id);
        return r == null ? local.checkpoints(caller, id)
                : Arrays.asList(call(r, "GET", "/checkpoints", caller, null, CheckpointInfo[].class));
    }

    @Override
    public void deleteCheckpoint(Caller caller, String id, String tag) {
        Remote r = remote(caller, id);
        if (r == null) {
            local.deleteCheckpoint(caller, id, tag);
        } else {
            call(r, "DELETE", "/checkpoints/" + Forwarding.segment(tag), caller, null, null);
        }
    }

    /**
     * With nodes, what the fleet can run: each backend once, as the connected nodes report it,
     * available if it is on any of them, with their sandboxes summed and the nodes named in
     * {@code details.nodes}. Without nodes, this daemon's own.
     */
    @Override
    public List<BackendInfo> backends() {
        if (!nodes.any()) {
            return local.backends();
        }
        Map<String, BackendInfo> merged = new java.util.TreeMap<>();
        // a node that is away, or gone since its last hello, gives nothing: what it runs is not on offer now
        forwarding.listParts(nodes.ids(), "/v1/backends", NodeLink.MASTER, BackendInfo[].class).forEach((node, there) -> {
            for (BackendInfo b : there == null ? new BackendInfo[0] : there) {
                merged.merge(b.name(), onNode(b, node), FleetSandboxes::both);
            }
        });
        return List.copyOf(merged.values());
    }

    private static BackendInfo onNode(BackendInfo b, String node) {
        Map<String, String> details = new java.util.TreeMap<>(b.details() == null ? Map.of() : b.details());
        details.put("nodes", node);
        return new BackendInfo(b.name(), b.bundle(), b.version(), b.capabilities(), b.machine(), b.available(),
                b.available() ? null : node + ": " + b.reason(), b.sandboxes(), details, b.clientMayName());
    }

    private static BackendInfo both(BackendInfo a, BackendInfo b) {
        Map<String, String> details = new java.util.TreeMap<>(a.details());
        details.put("nodes", a.details().get("nodes") + "," + b.details().get("nodes"));
        boolean available = a.available() || b.available();
        String reason = available ? null : a.reason() + "; " + b.reason();
        // clients may name it through the master where every node that runs it lets them
        Boolean mayName = a.clientMayName() == null ? b.clientMayName()
                : b.clientMayName() == null ? a.clientMayName() : a.clientMayName() && b.clientMayName();
        return new BackendInfo(a.name(), a.bundle(), a.version(), a.capabilities(), a.machine(), available, reason,
                a.sandboxes() + b.sandboxes(), details, mayName);
    }

    @Override
    public List<SandboxInfo> census() {
        return local.census();
    }

    @Override
    public BaselineResult baseline(Caller caller, String id, BaselineRequest request) {
        Remote r = remote(caller, id);
        return r == null ? local.baseline(caller, id, request) : call(r, "POST", "/baseline", caller, request, BaselineResult.class);
    }

    @Override
    public ChangeSet changes(Caller caller, String id, ChangesRequest request) {
        Remote r = remote(caller, id);
        return r == null ? local.changes(caller, id, request) : call(r, "POST", "/changes", caller, request, ChangeSet.class);
    }

    @Override
    public DryRunResult dryRun(Caller caller, String id, DryRunRequest request) {
        Remote r = remote(caller, id);
        return r == null ? local.dryRun(caller, id, request) : call(r, "POST", "/dry-run", caller, request, DryRunResult.class);
    }

    @Override
    public byte[] readFile(Caller caller, String id, String path) {
        Remote r = remote(caller, id);
        if (r == null) {
            return local.readFile(caller, id, path);
        }
        return bytes(r, "GET", caller, path, null);
    }

    @Override
    public void writeFile(Caller caller, String id, String path, byte[] content) {
        Remote r = remote(caller, id);
        if (r == null) {
            local.writeFile(caller, id, path, content);
        } else {
            bytes(r, "PUT", caller, path, content);
        }
    }

    @Override
    public Optional<Relay> relay(Caller caller, String id) {
        Remote r = remote(caller, id);
        return r == null ? Optional.empty() : forwarding.relay(r, caller);
    }

    private byte[] bytes(Remote r, String method, Caller caller, String path, byte[] content) {
        if (path == null) {
            throw ApiException.badRequest("query parameter 'path' is required: the file's absolute path inside the sandbox");
        }
        return forwarding.bytes(r, method, "/files?" + NodeLink.query("path", path), caller, content);
    }

    private void forget(String id) {
        try {
            placements.remove(id);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot forget the placement of sandbox " + id + ", which its node no longer has: " + e.getMessage());
        }
    }

    private <T> T call(Remote r, String method, String suffix, Caller caller, Object body, Class<T> type) {
        return forwarding.call(r, method, suffix, caller, body, type);
    }
}
