package io.vivarium.metrics.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.concurrent.atomic.AtomicBoolean;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.vivarium.api.BackendInfo;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.spi.FleetNode;
import io.vivarium.api.spi.RuntimeObserver;

/**
 * The daemon's metrics: counters and histograms fed by {@link RuntimeObserver} events, and gauges
 * read from core when scraped. One registry per instance (never the library's default registry,
 * which would outlive a bundle update). Exemplars are off: sampling them loads the client's optional
 * tracer initializer, which is not installed (nothing here traces).
 */
class VivariumMetrics implements RuntimeObserver {

    /** The content type of {@link #scrape()}: the Prometheus text format 0.0.4. */
    static final String CONTENT_TYPE = PrometheusTextFormatWriter.CONTENT_TYPE;

    private static final System.Logger LOG = System.getLogger(VivariumMetrics.class.getName());
    private static final double NANOS_PER_SECOND = 1e9;
    /** Lock waits and state writes: from tens of microseconds (an uncontended lock, an fsync) up. */
    private static final double[] FAST_BOUNDS = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
            0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    /** Requests, lock holds and bundle updates: a create or an update takes seconds, a VM boot minutes. */
    private static final double[] SLOW_BOUNDS = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
            30, 60, 120, 300};

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
    private final Supplier<List<SandboxInfo>> census;
    private final Supplier<List<BackendInfo>> backends;

    private final Counter requests;
    private final Histogram requestSeconds;
    private final Counter creates;
    private final Counter deletes;
    private final Counter demotions;
    private final Histogram lockWaitSeconds;
    private final Histogram lockHeldSeconds;
    private final Histogram stateWriteSeconds;
    private final Histogram storeLockWaitSeconds;
    private final Histogram storeLockHeldSeconds;
    private final Counter imageFetches;
    private final Histogram imageFetchSeconds;
    private final Counter imageFetchedBytes;
    private final Gauge storeUp;
    private final Counter bundleUpdates;
    private final Histogram bundleUpdateSeconds;

    private final AtomicBoolean failureLogged = new AtomicBoolean();

    /** What the gauges read during one scrape: core is asked once per scrape, not once per gauge. */
    private List<SandboxInfo> sandboxesNow = List.of();
    private volatile List<FleetNode> fleetNow = List.of();
    private List<BackendInfo> backendsNow = List.of();

    /**
     * @param census every tenant's sandboxes with their usage ({@code SandboxService.census})
     * @param backends the registered backends ({@code SandboxService.backends})
     */
    VivariumMetrics(Supplier<List<SandboxInfo>> census, Supplier<List<BackendInfo>> backends) {
        this.census = census;
        this.backends = backends;
        requests = Counter.builder().name("vivarium_http_requests_total")
                .help("HTTP requests answered, by method, matched route template and status class")
                .labelNames("method", "route", "class").withoutExemplars().register(registry);
        requestSeconds = Histogram.builder().name("vivarium_http_request_duration_seconds")
                .help("Time from a request reaching the edge to its answer, by method, route template and status class")
                .labelNames("method", "route", "class").classicOnly().classicUpperBounds(SLOW_BOUNDS).withoutExemplars().register(registry);
        creates = Counter.builder().name("vivarium_sandbox_creates_total")
                .help("Sandbox creates by outcome: ok, refused (no capacity: 503 with Retry-After), "
                        + "invalid (a 4xx), failed (anything else)")
                .labelNames("outcome").withoutExemplars().register(registry);
        for (CreateOutcome o : CreateOutcome.values()) {
            creates.initLabelValues(label(o));
        }
        deletes = Counter.builder().name("vivarium_sandbox_deletes_total").help("Sandboxes deleted")
                .withoutExemplars().register(registry);
        demotions = Counter.builder().name("vivarium_demotions_total")
                .help("Sandboxes demoted while idle, by the tier they went to (warm: paused, memory kept)")
                .labelNames("to").withoutExemplars().register(registry);
        demotions.initLabelValues("warm");
        lockWaitSeconds = Histogram.builder().name("vivarium_sandbox_lock_wait_seconds")
                .help("Time waited for a sandbox's lifecycle lock (create, adopt, delete)")
                .classicOnly().classicUpperBounds(FAST_BOUNDS).withoutExemplars().register(registry);
        lockHeldSeconds = Histogram.builder().name("vivarium_sandbox_lock_held_seconds")
                .help("Time a sandbox's lifecycle lock was held")
                .classicOnly().classicUpperBounds(SLOW_BOUNDS).withoutExemplars().register(registry);
        stateWriteSeconds = Histogram.builder().name("vivarium_state_write_seconds")
                .help("Time to write a record to the state store (temp file, fsync, rename, fsync of the directory)")
                .classicOnly().classicUpperBounds(FAST_BOUNDS).withoutExemplars().register(registry);
        storeLockWaitSeconds = Histogram.builder().name("vivarium_store_lock_wait_seconds")
                .help("Time a state store commit waited for the store's locks and, on PostgreSQL, a connection, by store")
                .labelNames("store").classicOnly().classicUpperBounds(FAST_BOUNDS).withoutExemplars().register(registry);
        storeLockHeldSeconds = Histogram.builder().name("vivarium_store_lock_held_seconds")
                .help("Time a state store commit held them (its write or database transaction), by store")
                .labelNames("store").classicOnly().classicUpperBounds(FAST_BOUNDS).withoutExemplars().register(registry);
        storeUp = Gauge.builder().name("vivarium_store_up")
                .help("1 while the state store can be reached (the file store always), 0 while its database is away, by store")
                .labelNames("store").withoutExemplars().register(registry);
        imageFetches = Counter.builder().name("vivarium_image_fetches_total")
                .help("Snapshot images a node fetched from the node that holds them, by outcome (ok, failed)")
                .labelNames("outcome").withoutExemplars().register(registry);
        imageFetchSeconds = Histogram.builder().name("vivarium_image_fetch_seconds")
                .help("Time a node took to fetch a snapshot image it lacked (ticket, transfer, checks, publish)")
                .classicOnly().classicUpperBounds(SLOW_BOUNDS).withoutExemplars().register(registry);
        imageFetchedBytes = Counter.builder().name("vivarium_image_fetched_bytes_total")
                .help("Bytes of the snapshot images nodes fetched (apparent sizes: holes count, though they do not cross the wire)")
                .withoutExemplars().register(registry);
        bundleUpdates = Counter.builder().name("vivarium_bundle_updates_total")
                .help("Bundles replaced at run time, by bundle and outcome (ok, or failed and rolled back)")
                .labelNames("bundle", "outcome").withoutExemplars().register(registry);
        bundleUpdateSeconds = Histogram.builder().name("vivarium_bundle_update_duration_seconds")
                .help("Time to replace a bundle at run time: stop, update, refresh, start (or roll back)")
                .labelNames("bundle").classicOnly().classicUpperBounds(SLOW_BOUNDS).withoutExemplars().register(registry);

        GaugeWithCallback.builder().name("vivarium_nodes").help("The fleet's nodes by state (connected, disconnected, revoked); "
                + "none on a daemon that drives no node").labelNames("state").callback(cb -> {
                    Map<String, Integer> counts = new LinkedHashMap<>();
                    fleetNow.forEach(n -> counts.merge(n.state(), 1, Integer::sum));
                    counts.forEach((state, n) -> cb.call(n, state));
                }).register(registry);
        nodeGauge("vivarium_node_sandboxes", "Sandboxes a node ran at its last hello", FleetNode::sandboxes);
        nodeGauge("vivarium_node_max_sandboxes", "Sandboxes a node takes at most", FleetNode::maxSandboxes);
        nodeGauge("vivarium_node_mem_available_bytes", "A node's available memory at its last hello", FleetNode::memAvailableBytes);
        GaugeWithCallback.builder().name("vivarium_sandboxes").help("Sandboxes by backend, status and tier (hot, warm, "
                + "cold; none where it is not known)")
                .labelNames("backend", "status", "tier").callback(cb -> {
                    Map<List<String>, Integer> counts = new LinkedHashMap<>();
                    sandboxesNow.forEach(s -> counts.merge(List.of(s.backend(), s.status(), s.tier() == null ? "none" : s.tier()),
                            1, Integer::sum));
                    counts.forEach((k, n) -> cb.call(n, k.get(0), k.get(1), k.get(2)));
                }).register(registry);
        GaugeWithCallback.builder().name("vivarium_backend_available")
                .help("1 if the backend can create sandboxes on this host, 0 if not (GET /v1/backends says why)")
                .labelNames("backend").callback(cb -> backendsNow.forEach(b -> cb.call(b.available() ? 1 : 0, b.name())))
                .register(registry);
        usageGauge("vivarium_sandbox_resident_memory_bytes", "Resident memory of a sandbox's processes",
                s -> s.usage().residentMemoryBytes());
        usageGauge("vivarium_sandbox_workspace_bytes", "Bytes a sandbox's writable workspace occupies on the host",
                s -> s.usage().diskBytes());
        CounterWithCallback.builder().name("vivarium_sandbox_cpu_seconds_total")
                .help("CPU time (user + system) a sandbox's processes have used since it started")
                .labelNames("sandbox", "tenant", "backend")
                .callback(cb -> eachMeasured(s -> s.usage().cpuSeconds(), (s, v) -> cb.call(v, s.id(), s.tenant(), s.backend())))
                .register(registry);
    }

    /** A gauge per node that is not revoked and has answered a hello. */
    private void nodeGauge(String name, String help, java.util.function.ToLongFunction<FleetNode> figure) {
        GaugeWithCallback.builder().name(name).help(help).labelNames("node", "pool").callback(cb -> fleetNow.stream()
                .filter(n -> !"revoked".equals(n.state()) && n.sandboxes() >= 0)
                .forEach(n -> cb.call(figure.applyAsLong(n), n.node(), n.pool()))).register(registry);
    }

    @Override
    public void fleetNodes(List<FleetNode> nodes) {
        fleetNow = List.copyOf(nodes);
    }

    private void usageGauge(String name, String help, Function<SandboxInfo, Number> figure) {
        GaugeWithCallback.builder().name(name).help(help).labelNames("sandbox", "tenant", "backend")
                .callback(cb -> eachMeasured(figure, (s, v) -> cb.call(v, s.id(), s.tenant(), s.backend())))
                .register(registry);
    }

    /** Calls {@code action} for every sandbox whose backend measured {@code figure}. */
    private void eachMeasured(Function<SandboxInfo, Number> figure, BiConsumer<SandboxInfo, Double> action) {
        for (SandboxInfo s : sandboxesNow) {
            Number v = s.usage() == null ? null : figure.apply(s);
            if (v != null) {
                action.accept(s, v.doubleValue());
            }
        }
    }

    /** Every metric in the Prometheus text format, asking core for the sandboxes and backends once. */
    synchronized byte[] scrape() {
        sandboxesNow = census.get();
        backendsNow = backends.get();
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            writer.write(out, registry.scrape());
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not throw
        } finally {
            sandboxesNow = List.of();
            backendsNow = List.of();
        }
    }

    @Override
    public void requestCompleted(String method, String route, int status, long nanos) {
        record(() -> {
            String statusClass = statusClass(status);
            requests.labelValues(method, route, statusClass).inc();
            requestSeconds.labelValues(method, route, statusClass).observe(nanos / NANOS_PER_SECOND);
        });
    }

    @Override
    public void sandboxCreated(CreateOutcome outcome) {
        record(() -> creates.labelValues(label(outcome)).inc());
    }

    @Override
    public void sandboxDemoted(String tier) {
        record(() -> demotions.labelValues(tier).inc());
    }

    @Override
    public void sandboxDeleted() {
        record(deletes::inc);
    }

    @Override
    public void lifecycleLockReleased(long waitNanos, long heldNanos) {
        record(() -> {
            lockWaitSeconds.observe(waitNanos / NANOS_PER_SECOND);
            lockHeldSeconds.observe(heldNanos / NANOS_PER_SECOND);
        });
    }

    @Override
    public void stateWritten(long nanos) {
        record(() -> stateWriteSeconds.observe(nanos / NANOS_PER_SECOND));
    }

    @Override
    public void storeCommitted(String store, long waitNanos, long heldNanos) {
        record(() -> {
            storeLockWaitSeconds.labelValues(store).observe(waitNanos / NANOS_PER_SECOND);
            storeLockHeldSeconds.labelValues(store).observe(heldNanos / NANOS_PER_SECOND);
        });
    }

    @Override
    public void storeHealth(String store, boolean up) {
        record(() -> storeUp.labelValues(store).set(up ? 1 : 0));
    }

    @Override
    public void imageFetched(String node, boolean ok, long bytes, long nanos) {
        record(() -> {
            imageFetches.labelValues(ok ? "ok" : "failed").inc();
            if (ok) {
                imageFetchSeconds.observe(nanos / NANOS_PER_SECOND);
                imageFetchedBytes.inc(bytes);
            }
        });
    }

    @Override
    public void bundleUpdated(String symbolicName, boolean ok, long nanos) {
        record(() -> {
            bundleUpdates.labelValues(symbolicName, ok ? "ok" : "failed").inc();
            bundleUpdateSeconds.labelValues(symbolicName).observe(nanos / NANOS_PER_SECOND);
        });
    }

    /**
     * Records an event. The observer contract is to never throw into the request that reports it (a
     * create that succeeded must not answer 500 because a metric failed), so a failure is logged once.
     */
    private void record(Runnable update) {
        try {
            update.run();
        } catch (RuntimeException | LinkageError e) {
            if (failureLogged.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.ERROR, "recording a metric failed; further failures are not logged", e);
            }
        }
    }

    /** The status class as the seed names it: {@code success}, {@code client_error}, {@code server_error}, ... */
    static String statusClass(int status) {
        return switch (status / 100) {
            case 1 -> "informational";
            case 2 -> "success";
            case 3 -> "redirection";
            case 4 -> "client_error";
            case 5 -> "server_error";
            default -> "unknown";
        };
    }

    private static String label(CreateOutcome outcome) {
        return outcome.name().toLowerCase(Locale.ROOT);
    }
}
