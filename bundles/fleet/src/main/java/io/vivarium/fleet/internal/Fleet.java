package io.vivarium.fleet.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Dictionary;
import java.util.Hashtable;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.Caller;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.VmService;
import io.vivarium.api.CommandService;
import io.vivarium.api.PortService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.BearerTokens;
import io.vivarium.api.spi.HeldImage;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.api.spi.SnapshotCopies;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStoreProvider;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.common.ports.PortTokens;
import io.vivarium.common.state.NodeId;

import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceRegistration;
import org.osgi.framework.Version;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Modified;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;

/**
 * The fleet on this daemon. As a master it keeps its nodes and placements in a store of its own
 * (beside core's, from the same provider), greets every node every {@value #WATCH_PERIOD_SECONDS}
 * s, reconciles a node's sandboxes each time it connects, and offers the services that place and
 * forward ({@link FleetSandboxes}, {@link FleetVms}, {@link FleetCommands}, {@link FleetSnapshots},
 * {@link FleetPorts}, ranked above core's own, which they wrap). As a node it answers the master's hello. Both halves are on
 * every daemon with the fleet feature: a daemon without nodes serves its own sandboxes, exactly as
 * without the feature.
 *
 * <p>Reads core's configuration PID for the node's {@code max_sandboxes} and {@code state_dir}, so
 * the hello tells the master the limit core enforces.
 */
@Component(immediate = true, configurationPid = "io.vivarium.core.internal.SandboxManager")
public class Fleet {
    private static final System.Logger LOG = System.getLogger(Fleet.class.getName());
    static final long WATCH_PERIOD_SECONDS = 2;
    private static final int RECONCILE_ATTEMPTS = 5;
    /**
     * Every minute, besides at each connect, a connected node's sandboxes are reconciled: a placement
     * a failed write left out, or a ghost a failed delete left in, is mended without waiting for the
     * node to go and come back.
     */
    private static final int RECONCILE_EVERY_ROUNDS = 30;
    private int rounds;

    public @interface Config {
        int max__sandboxes() default 1000;

        String state__dir() default "";
    }

    private final SandboxService local;
    private final StateStore store;
    private final Nodes nodes;
    private final Placements placements;
    private final String nodeId;
    private final String version;
    private volatile int maxSandboxes;
    private final ScheduledExecutorService watch = Executors.newSingleThreadScheduledExecutor(r -> thread(r, "vivarium-fleet-watch"));
    private final ExecutorService calls = Executors.newCachedThreadPool(r -> thread(r, "vivarium-fleet-call"));
    private final Set<String> checking = ConcurrentHashMap.newKeySet();
    private final List<ServiceRegistration<?>> registrations;
    /** On a node that dials in: what registers it and long-polls its master; null otherwise. */
    private final MasterPoller poller;

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    private volatile RuntimeObserver observer;

    @Activate
    public Fleet(BundleContext context, Config config,
            @Reference(target = "(!(" + FleetSandboxes.FLEET_PROPERTY + "=*))") SandboxService local,
            @Reference(target = "(!(" + FleetSandboxes.FLEET_PROPERTY + "=*))") SnapshotService localSnapshots,
            @Reference(target = "(!(" + FleetSandboxes.FLEET_PROPERTY + "=*))") VmService localVms,
            @Reference(target = "(!(" + FleetSandboxes.FLEET_PROPERTY + "=*))") CommandService localCommands,
            @Reference(target = "(!(" + FleetSandboxes.FLEET_PROPERTY + "=*))") PortService localPorts,
            @Reference StateStoreProvider stores, @Reference SnapshotCopies copies) throws IOException {
        this.local = local;
        // read first (a node's pull-mode files): a failure here leaves nothing open
        java.util.Optional<NodePullConfig> pull = NodePullConfig.from(context);
        this.poller = pull.isPresent() ? new MasterPoller(pull.get(), this::hello) : null;
        Path stateDir = Path.of(firstNonEmpty(config.state__dir(), context.getProperty("vivarium.state.dir"), "var"));
        this.store = stores.open(privateDir(stateDir.resolve("fleet")), NodeId.readOrCreate(stateDir) + ".fleet",
                FleetCollections.ALL, StoreEvents.NONE);
        this.placements = new Placements(store);
        this.nodes = new Nodes(store, SecretBox.in(privateDir(stateDir.resolve("pki/master"))), id -> calls.execute(() -> reconcile(id)),
                this::tellNodes);
        this.nodeId = firstNonEmpty(context.getProperty("vivarium.node.id"), hostName(), "node");
        Version v = context.getBundle().getVersion();
        this.version = v.getMajor() + "." + v.getMinor() + "." + v.getMicro();
        this.maxSandboxes = Math.max(1, config.max__sandboxes());
        Dictionary<String, Object> ranked = new Hashtable<>();
        ranked.put(Constants.SERVICE_RANKING, 100);
        ranked.put(FleetSandboxes.FLEET_PROPERTY, "master");
        Forwarding forwarding = new Forwarding(nodes, placements);
        Registrations registrations = new Registrations(store);
        ImageTickets tickets = new ImageTickets();
        FleetSandboxes sandboxes = new FleetSandboxes(local, nodes, placements, forwarding, this::observer);
        this.registrations = List.of(
                context.registerService(SandboxService.class, sandboxes, ranked),
                context.registerService(VmService.class, new FleetVms(localVms, nodes, sandboxes, forwarding), ranked),
                context.registerService(CommandService.class, new FleetCommands(localCommands, forwarding), ranked),
                context.registerService(PortService.class, new FleetPorts(localPorts, forwarding, placements,
                        new PortTokens(stateDir)), ranked),
                context.registerService(SnapshotService.class, new FleetSnapshots(localSnapshots, nodes, placements, forwarding, this::observer), ranked),
                context.registerService(ApiSurface.class, new FleetSurface(nodes, registrations, this::hello, local::census), null),
                context.registerService(ApiSurface.class, new ImageSurface(copies, tickets), null),
                context.registerService(BearerTokens.class, new FleetTokens(registrations, nodes, tickets), null));
        watch.scheduleWithFixedDelay(this::greetAll, 0, WATCH_PERIOD_SECONDS, TimeUnit.SECONDS);
        if (poller != null) {
            poller.start();
        }
    }

    /** Core's configuration changed: the limit the hello reports follows; nothing restarts (the nodes' live state is kept). */
    @Modified
    void modified(Config config) {
        maxSandboxes = Math.max(1, config.max__sandboxes());
    }

    @Deactivate
    void deactivate() {
        if (poller != null) {
            poller.close();
        }
        registrations.forEach(r -> {
            try {
                r.unregister();
            } catch (IllegalStateException alreadyGone) {
                // the bundle is stopping: the framework took them down
            }
        });
        nodes.retireAll();
        watch.shutdownNow();
        calls.shutdownNow();
        store.close();
    }

    private void greetAll() {
        try {
            boolean reconcileNow = ++rounds % RECONCILE_EVERY_ROUNDS == 0;
            for (String id : nodes.ids()) {
                if (reconcileNow && nodes.connected(id)) {
                    calls.execute(() -> reconcile(id));
                }
                if (checking.add(id)) {
                    calls.execute(() -> {
                        try {
                            nodes.check(id);
                            tellNodes();
                        } finally {
                            checking.remove(id);
                        }
                    });
                }
            }
        } catch (RuntimeException e) {
            LOG.log(Level.ERROR, "greeting the nodes failed; trying again in " + WATCH_PERIOD_SECONDS + " s", e);
        }
    }

    private RuntimeObserver observer() {
        RuntimeObserver o = observer;
        return o == null ? RuntimeObserver.NONE : o;
    }

    private void tellNodes() {
        observer().fleetNodes(nodes.gauges());
    }

    /** Takes the node's own list of sandboxes as the truth for the master's placements on it (at connect, and every minute). */
    private void reconcile(String id) {
        for (int attempt = 1;; attempt++) {
            try {
                long listedAt = java.time.Instant.now().getEpochSecond() - 1;
                SandboxInfo[] there = nodes.link(id).call("GET", "/v1/node/sandboxes", NodeLink.MASTER, null, SandboxInfo[].class);
                placements.reconcile(id, Arrays.asList(there), listedAt);
                HeldImage[] held = nodes.link(id).call("GET", "/v1/node/images", NodeLink.MASTER, null, HeldImage[].class);
                for (HeldImage orphan : placements.reconcileTags(id, Arrays.asList(held), listedAt)) {
                    dropOrphan(id, orphan);
                }
                return;
            } catch (StaleRevisionException e) {
                if (attempt < RECONCILE_ATTEMPTS) {
                    continue; // a create or delete committed meanwhile: ask the node again
                }
                LOG.log(Level.WARNING, "cannot reconcile node " + id + "'s sandboxes: placements kept changing under "
                        + RECONCILE_ATTEMPTS + " attempts; it is tried again when the node next connects");
                return;
            } catch (IOException | RuntimeException e) {
                LOG.log(Level.WARNING, "cannot reconcile node " + id + "'s sandboxes now (" + e.getMessage()
                        + "); it is tried again when the node next connects");
                return;
            }
        }
    }

    /** Deletes a copy whose tag the master has no record of (deleted while the master did not know of the copy). */
    private void dropOrphan(String id, HeldImage orphan) {
        try {
            nodes.link(id).call("DELETE", "/v1/snapshots/" + Forwarding.segment(orphan.tag()) + "?force=true",
                    new Caller(orphan.tenant(), Role.OPERATOR), null, null);
            LOG.log(Level.INFO, "node " + id + "'s copy of " + orphan.tag() + " of tenant " + orphan.tenant()
                    + ", a tag the master has no record of, was deleted");
        } catch (NodeLink.NodeFailure | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot delete node " + id + "'s copy of " + orphan.tag() + " of tenant " + orphan.tenant()
                    + " (the next reconciliation tries again): " + e.getMessage());
        }
    }

    private NodeHello hello() {
        return new NodeHello(nodeId, version, HostFingerprint.ofThisHost(version, local.backends()), maxSandboxes,
                local.census().size(), memAvailableMib());
    }

    /** The fleet's records hold each node's pairing secret: on files, only the daemon's user reads them. */
    private static Path privateDir(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        return dir;
    }

    static long memAvailableMib() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemAvailable:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux, or an unreadable /proc: unknown
        }
        return -1;
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return null;
        }
    }

    private static String firstNonEmpty(String... values) {
        for (String v : values) {
            if (v != null && !v.isBlank()) {
                return v;
            }
        }
        return null;
    }

    private static Thread thread(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
