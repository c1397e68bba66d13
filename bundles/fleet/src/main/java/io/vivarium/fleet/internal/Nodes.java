package io.vivarium.fleet.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;
import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;

/**
 * The nodes the master drives: their records in the master's store, and what the last hello of
 * each said (connected or not, load, free memory). Adding a node dials it first; placement picks
 * the least loaded connected node.
 */
final class Nodes {
    private static final System.Logger LOG = System.getLogger(Nodes.class.getName());
    static final String DEFAULT_POOL = "default";
    private static final Pattern POOL = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
    /** Hellos missed in a row before a node is disconnected: one lost packet is not an outage. */
    static final int MISSES_TO_DISCONNECT = 2;
    /** How long after its last poll a node that dials in still counts as connected. */
    static final java.time.Duration POLL_GRACE = java.time.Duration.ofSeconds(3);

    enum State {
        CONNECTED, DISCONNECTED, REVOKED;

        String wire() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** What the master knows of a node now, beside its record. */
    static final class Live {
        final NodeLink link;
        /** For a node that dials in: its queue of calls; null for one the master dials. */
        final PolledTransport polled;
        /** Polls of the node parked now (it is alive while one is). */
        int parked;
        volatile NodeHello hello;
        volatile State state = State.DISCONNECTED;
        volatile String reason = "not yet greeted since the master started";
        volatile Instant lastSeen;
        int misses;

        Live(NodeLink link) {
            this.link = link;
            this.polled = null;
        }

        Live(String id, Supplier<Boolean> connected) {
            this.polled = new PolledTransport(id, connected::get);
            this.link = new NodeLink("node " + id + " (which dials in)", polled);
        }
    }

    private final StateStore store;
    private final SecretBox secrets;
    private final Map<String, Live> live = new ConcurrentHashMap<>();
    private final Consumer<String> connected;
    private final Runnable changed;

    /**
     * @param connected told the id of a node that has just become connected, to reconcile its sandboxes
     * @param changed told when a node was added or revoked
     */
    Nodes(StateStore store, SecretBox secrets, Consumer<String> connected, Runnable changed) {
        this.store = store;
        this.secrets = secrets;
        this.connected = connected;
        this.changed = changed;
    }

    NodeView add(AddNodeRequest request) throws IOException {
        NodeAddress address = NodeAddress.parse(request.address());
        PairingCode code = PairingCode.parse(request.pairingCode());
        String pool = request.pool() == null ? DEFAULT_POOL : checkPool(request.pool());
        if (request.nodeId() != null) {
            checkId(request.nodeId());
            refuseIfConnected(request.nodeId());
        }
        NodeLink link = NodeLink.dialled(address, code);
        NodeHello hello;
        try {
            hello = link.hello();
        } catch (NodeLink.NodeFailure e) {
            throw new ApiException(502, e.getMessage(), null, e);
        }
        if (hello.fingerprint() == null) {
            throw new ApiException(502, "the node at " + address + " sent a hello without its host fingerprint: is it a Vivarium node?");
        }
        String id = request.nodeId() != null ? request.nodeId() : checkId(hello.nodeId());
        refuseIfConnected(id);
        Optional<Stored<NodeRecord>> before = store.get(FleetCollections.NODES, id);
        NodeRecord node = new NodeRecord(id, poolFor(pool, id, hello.fingerprint()), address.toString(), code.certificateSha256(),
                secrets.seal(code.secret()), null, hello.fingerprint(), hello.maxSandboxes(), false,
                before.map(s -> s.body().addedAtUnix()).orElse(Instant.now().getEpochSecond()));
        store.put(FleetCollections.NODES, id, node, before.map(Stored::revision).orElse(Stored.ABSENT));
        Live now = new Live(link);
        greeted(now, hello);
        retire(live.put(id, now), "was added again");
        LOG.log(Level.INFO, "node " + id + " at " + address + " added to pool " + node.pool());
        connected.accept(id);
        changed.run();
        return view(node, now);
    }

    /**
     * A node that dials in redeems a registration token ({@code registration}, its key) once: its
     * record, in the token's pool (or the split of it its fingerprint makes), with the SHA-256 of
     * the credential it polls with from now on; registering again lifts a revocation.
     */
    PullWire.Registered register(Registrations registrations, String registration, PullWire.RegisterRequest request)
            throws IOException {
        if (request.hello() == null || request.hello().fingerprint() == null) {
            throw ApiException.badRequest("hello is required: the node's id, version, host fingerprint and load");
        }
        String id = checkId(request.nodeId() != null ? request.nodeId() : request.hello().nodeId());
        refuseIfConnected(id);
        Stored<Registrations.Registration> token = registrations.get(registration)
                .orElseThrow(() -> new ApiException(401, "this registration token was used already; ask the master's operator "
                        + "for a new one (POST /v1/node/tokens)"));
        if (token.body().nodeId() != null && !token.body().nodeId().equals(id)) {
            throw ApiException.conflict("this registration token is for node " + token.body().nodeId() + ", not " + id);
        }
        String credential = registrations.secret();
        Optional<Stored<NodeRecord>> before = store.get(FleetCollections.NODES, id);
        if (before.isPresent() && !before.get().body().pulls()) {
            throw ApiException.conflict("node " + id + " is one the master dials (listen mode); a node that dials in needs "
                    + "another id, or revoke that one and delete its record first");
        }
        if (before.isPresent() && token.body().nodeId() == null) {
            throw ApiException.conflict("node " + id + " is known already; to register it again (a new credential, which lifts "
                    + "a revocation) use a token issued for it: POST /v1/node/tokens {\"node_id\": \"" + id + "\"}");
        }
        NodeRecord node = new NodeRecord(id, poolFor(token.body().pool(), id, request.hello().fingerprint()), null, null, null,
                Registrations.sha256(credential), request.hello().fingerprint(), request.hello().maxSandboxes(), false,
                before.map(s -> s.body().addedAtUnix()).orElse(Instant.now().getEpochSecond()));
        store.commit(new io.vivarium.api.state.Transaction()
                .delete(FleetCollections.REGISTRATIONS, token.key(), token.revision())
                .put(FleetCollections.NODES, id, node, before.map(Stored::revision).orElse(Stored.ABSENT)));
        retire(live.remove(id), "registered again");
        LOG.log(Level.INFO, "node " + id + " registered (it dials in) in pool " + node.pool());
        changed.run();
        return new PullWire.Registered(id, node.pool(), credential);
    }

    /** The node whose polling credential {@code token} is, unless it is revoked. */
    Optional<String> polling(String token) {
        String sha = Registrations.sha256(token);
        return store.all(FleetCollections.NODES).stream().map(Stored::body)
                .filter(n -> !n.revoked() && n.credentialSha256() != null
                        && java.security.MessageDigest.isEqual(sha.getBytes(), n.credentialSha256().getBytes()))
                .map(NodeRecord::id).findFirst();
    }

    /** What the master knew of a node it no longer drives this way: calls still waiting for it fail now. */
    private static void retire(Live gone, String why) {
        if (gone != null && gone.polled != null) {
            gone.polled.failAll(why);
        }
    }

    /** Fails every call waiting for a node that dials in: the master is stopping. */
    void retireAll() {
        live.values().forEach(l -> retire(l, "is not polled: the master is stopping"));
    }

    /** A parked poll of a node that dials in: the poll is its hello; end it with {@link #pollEnded}. */
    Live pollStarted(String id, NodeHello hello) {
        Live l = pulled(id);
        boolean was;
        synchronized (l) {
            was = l.state == State.CONNECTED;
            greeted(l, hello);
            l.parked++;
        }
        if (!was) {
            LOG.log(Level.INFO, "node " + id + " (which dials in) is connected");
            connected.accept(id);
        }
        return l;
    }

    void pollEnded(Live l) {
        synchronized (l) {
            l.parked = Math.max(0, l.parked - 1);
            l.lastSeen = Instant.now();
        }
    }

    /** The queue of a node that dials in, for the answers it posts. */
    PolledTransport queueOf(String id) {
        return pulled(id).polled;
    }

    private Live pulled(String id) {
        Live l = live.computeIfAbsent(id, k -> new Live(k, () -> connected(k)));
        if (l.polled == null) {
            throw ApiException.conflict("node " + id + " is one the master dials, not one that polls");
        }
        return l;
    }

    void revoke(String id) throws IOException {
        Stored<NodeRecord> node = store.get(FleetCollections.NODES, id)
                .orElseThrow(() -> ApiException.notFound("no node " + id + " (GET /v1/nodes lists them)"));
        if (!node.body().revoked()) {
            store.put(FleetCollections.NODES, id, node.body().revoke(), node.revision());
        }
        retire(live.remove(id), "was revoked");
        changed.run();
        LOG.log(Level.INFO, "node " + id + " revoked: it is no longer contacted");
    }

    List<NodeView> list() {
        return store.all(FleetCollections.NODES).stream().map(Stored::body)
                .map(n -> view(n, live.get(n.id()))).sorted(Comparator.comparing(NodeView::id)).toList();
    }

    /** The nodes as metrics show them. */
    List<io.vivarium.api.spi.FleetNode> gauges() {
        return list().stream().map(n -> new io.vivarium.api.spi.FleetNode(n.id(), n.pool(), n.state(),
                n.sandboxes() == null ? -1 : n.sandboxes(), n.maxSandboxes(),
                n.memAvailableMib() == null || n.memAvailableMib() < 0 ? -1 : n.memAvailableMib() << 20)).toList();
    }

    /** Whether any node is registered and not revoked: then the master places sandboxes on nodes, not on itself. */
    boolean any() {
        return store.all(FleetCollections.NODES).stream().anyMatch(n -> !n.body().revoked());
    }

    List<String> ids() {
        return store.all(FleetCollections.NODES).stream().filter(n -> !n.body().revoked()).map(Stored::key).toList();
    }

    /** The least loaded connected node with room, by the share of its maximum it runs. */
    String pick() {
        return pick(id -> true, "");
    }

    /**
     * The least loaded connected node with room among those {@code eligible} takes; 503 naming
     * {@code which} (what made a node eligible) when none has room.
     */
    String pick(Predicate<String> eligible, String which) {
        return spread(eligible, 1, Map.of(), which).keySet().iterator().next();
    }

    /**
     * Shares {@code n} new sandboxes among the connected nodes {@code eligible} takes, each to the
     * node with the smallest share of its maximum in use once those before it and {@code planned}
     * (sandboxes already headed for a node) are counted; 503 naming {@code which} (what made a node
     * eligible) when they have no room for all of them.
     *
     * @return how many go to each node, in the order they were first chosen
     */
    Map<String, Integer> spread(Predicate<String> eligible, int n, Map<String, Integer> planned, String which) {
        Map<String, int[]> load = new java.util.TreeMap<>(); // node -> {sandboxes, max}
        live.forEach((id, l) -> {
            NodeHello h = l.hello;
            if (l.state == State.CONNECTED && h != null && !revoked(id) && eligible.test(id)) {
                load.put(id, new int[] {h.sandboxes() + planned.getOrDefault(id, 0), h.maxSandboxes()});
            }
        });
        Map<String, Integer> plan = new java.util.LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String node = load.entrySet().stream().filter(e -> e.getValue()[0] < e.getValue()[1])
                    .min(Comparator.comparingDouble(e -> (double) e.getValue()[0] / e.getValue()[1]))
                    .map(Map.Entry::getKey)
                    .orElseThrow(() -> ApiException.noCapacity("no connected node" + which + " has room for "
                            + (n == 1 ? "another sandbox" : n + " more sandboxes") + " (" + live.size()
                            + " node(s) known; GET /v1/nodes shows each one's state and load)", 5));
            load.get(node)[0]++;
            plan.merge(node, 1, Integer::sum);
        }
        return plan;
    }

    /** The record of a node that is not revoked. */
    Optional<NodeRecord> record(String id) {
        return store.get(FleetCollections.NODES, id).map(Stored::body).filter(n -> !n.revoked());
    }

    /** The node a create or fork names ({@code node_id}): 404 if there is none, 409 if it is revoked, 503 if it is full. */
    String named(String id) {
        NodeRecord node = store.get(FleetCollections.NODES, id).map(Stored::body)
                .orElseThrow(() -> ApiException.notFound("node_id: no node " + id + " (GET /v1/nodes lists them)"));
        if (node.revoked()) {
            throw ApiException.conflict("node_id: node " + id + " is revoked; add it again to place sandboxes on it");
        }
        Live l = live.get(id);
        NodeHello h = l == null ? null : l.hello;
        if (h != null && h.sandboxes() >= h.maxSandboxes()) {
            throw ApiException.noCapacity("node " + id + " runs " + h.sandboxes() + " of its " + h.maxSandboxes()
                    + " sandboxes; leave node_id out to place the sandbox on the least loaded node", 5);
        }
        return id;
    }

    /** The host fingerprint a node last reported. */
    HostFingerprint fingerprint(String id) {
        Live l = live.get(id);
        NodeHello h = l == null ? null : l.hello;
        if (h != null && h.fingerprint() != null) {
            return h.fingerprint();
        }
        return store.get(FleetCollections.NODES, id).map(s -> s.body().fingerprint()).orElse(null);
    }

    /** The link to a connected node; 503 with Retry-After while it does not answer. */
    NodeLink link(String id) {
        Live l = live.get(id);
        if (revoked(id)) {
            throw ApiException.unavailable("node " + id + " is revoked: the master no longer contacts it; add it again "
                    + "with its pairing code (POST /v1/nodes) to reach its sandboxes", 30);
        }
        if (l == null || l.state != State.CONNECTED) {
            throw ApiException.unavailable("node " + id + " does not answer the master now"
                    + (l != null && l.reason != null ? " (" + l.reason + ")" : "") + "; retry once it is back", 2);
        }
        return l.link;
    }

    /** Whether node {@code id} is revoked: the master no longer contacts it. */
    boolean revoked(String id) {
        return store.get(FleetCollections.NODES, id).map(n -> n.body().revoked()).orElse(false);
    }

    boolean connected(String id) {
        Live l = live.get(id);
        return l != null && l.state == State.CONNECTED;
    }

    /** A sandbox was placed on, or left, a node: count it until the next hello says. */
    void counted(String id, int delta) {
        Live l = live.get(id);
        NodeHello h = l == null ? null : l.hello;
        if (h != null) {
            l.hello = new NodeHello(h.nodeId(), h.version(), h.fingerprint(), h.maxSandboxes(), Math.max(0, h.sandboxes() + delta),
                    h.memAvailableMib());
        }
    }

    /** Greets every node that is not revoked; called by the watch, one call per node, possibly at once. */
    void check(String id) {
        Optional<Stored<NodeRecord>> record = store.get(FleetCollections.NODES, id);
        if (record.isEmpty() || record.get().body().revoked()) {
            live.remove(id);
            return;
        }
        NodeRecord node = record.get().body();
        if (node.pulls()) {
            checkPolling(id);
            return;
        }
        Live l = live.get(id);
        if (l == null) {
            NodeLink link;
            try {
                link = NodeLink.dialled(node.nodeAddress(), node.pairingCode(secrets));
            } catch (IOException e) {
                // every hello fails with why, so GET /v1/nodes shows it
                link = new NodeLink("node " + id, (method, path, caller, body, type, timeout) -> {
                    throw new NodeLink.NodeFailure(e.getMessage(), e);
                });
            }
            NodeLink made = link;
            l = live.computeIfAbsent(id, k -> new Live(made));
        }
        try {
            NodeHello hello = l.link.hello();
            boolean was = l.state == State.CONNECTED;
            greeted(l, hello);
            if (!was) {
                LOG.log(Level.INFO, "node " + id + " at " + node.address() + " is connected");
                connected.accept(id);
            }
        } catch (NodeLink.NodeFailure e) {
            synchronized (l) {
                l.misses++;
                String before = l.reason;
                l.reason = e.getMessage();
                if (l.misses >= MISSES_TO_DISCONNECT && l.state == State.CONNECTED) {
                    l.state = State.DISCONNECTED;
                    LOG.log(Level.WARNING, "node " + id + " is disconnected: " + e.getMessage());
                    l.link.cut(e.getMessage());
                } else if (l.state == State.DISCONNECTED && !l.reason.equals(before)) {
                    LOG.log(Level.WARNING, "node " + id + " is not connected: " + e.getMessage());
                }
            }
        }
    }

    /** A node that dials in is alive while a poll of it is parked, or within {@link #POLL_GRACE} of the last one. */
    private void checkPolling(String id) {
        Live l = pulled(id);
        synchronized (l) {
            boolean quiet = l.parked == 0 && (l.lastSeen == null || l.lastSeen.plus(POLL_GRACE).isBefore(Instant.now()));
            if (quiet && l.state == State.CONNECTED) {
                l.state = State.DISCONNECTED;
                l.reason = "it has not polled since " + l.lastSeen;
                l.polled.failAll("stopped polling");
                LOG.log(Level.WARNING, "node " + id + " (which dials in) is disconnected: " + l.reason);
            }
        }
    }

    private static void greeted(Live l, NodeHello hello) {
        synchronized (l) {
            l.hello = hello;
            l.misses = 0;
            l.reason = null;
            l.lastSeen = Instant.now();
            l.state = State.CONNECTED;
        }
    }

    /** The requested pool, or {@code <pool>#<fp8>} if the pool's nodes have another fingerprint. */
    private String poolFor(String pool, String id, HostFingerprint fp) {
        Optional<HostFingerprint> pools = store.all(FleetCollections.NODES).stream().map(Stored::body)
                .filter(n -> !n.id().equals(id) && !n.revoked() && n.pool().equals(pool) && n.fingerprint() != null)
                .map(NodeRecord::fingerprint).findFirst();
        return pools.isEmpty() || pools.get().equals(fp) ? pool : pool + "#" + fp.fp8();
    }

    static String checkPool(String pool) {
        if (!POOL.matcher(pool).matches()) {
            throw ApiException.badRequest("pool '" + pool + "' must be 1 to 63 letters, digits, '.', '_' or '-'; nothing was dialled");
        }
        return pool;
    }

    private void refuseIfConnected(String id) {
        Optional<Stored<NodeRecord>> known = store.get(FleetCollections.NODES, id);
        if (known.isPresent() && !known.get().body().revoked() && connected(id)) {
            throw ApiException.conflict("node " + id + " is connected now; revoke it first (POST /v1/node/revoke/" + id
                    + ") to add it again with another address or code");
        }
    }

    static String checkId(String id) {
        if (!RecordCollection.isKey(id) || id.length() > 63) {
            throw ApiException.badRequest("node_id '" + id + "' must be 1 to 63 letters, digits, '.', '_' or '-', "
                    + "starting with a letter or digit");
        }
        return id;
    }

    private static NodeView view(NodeRecord n, Live l) {
        State state = n.revoked() ? State.REVOKED : l == null ? State.DISCONNECTED : l.state;
        NodeHello h = l == null ? null : l.hello;
        HostFingerprint fp = h != null && h.fingerprint() != null ? h.fingerprint() : n.fingerprint();
        return new NodeView(n.id(), n.pulls() ? "pull" : "listen", n.pool(), n.address(), fp == null ? null : fp.fp8(), fp,
                h != null ? h.maxSandboxes() : n.maxSandboxes(), state.wire(), h == null ? null : h.sandboxes(),
                h == null ? null : h.memAvailableMib(), state == State.CONNECTED ? null : l == null ? null : l.reason,
                l == null || l.lastSeen == null ? null : l.lastSeen.getEpochSecond());
    }
}
