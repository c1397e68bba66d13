package io.vivarium.testkit;

import java.util.List;
import java.util.Optional;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.SandboxInstance;

/**
 * An in-memory backend for tests of core: "processes" are pids in a set that several backend
 * objects (an old and an upgraded version) can share, and exec runs nothing: it records the
 * request and echoes its argv. It passes {@link SandboxBackendSuite} with
 * {@link SandboxBackendSuite.Feature#PROCESSES} declared missing.
 */
public final class FakeBackend implements SandboxBackend {
    private static final AtomicLong PIDS = new AtomicLong(1000);

    private final String name;
    /** The pids of the live instances; shared by the backends given the same set. */
    public final Set<Long> running;
    /** Files "inside" every instance, by path. */
    public final Map<String, byte[]> files = new ConcurrentHashMap<>();
    /** Every spec create received, in order. */
    public final List<InstanceSpec> creates = new CopyOnWriteArrayList<>();
    /** Every request exec received, in order. */
    public final List<ExecRequest> execs = new CopyOnWriteArrayList<>();
    /** When set, create throws it. */
    public volatile RuntimeException failCreate;
    /** When set, {@link #details()} throws. */
    public volatile boolean failDetails;
    /** Instances (by id) that say they were stopped on purpose, with the reason they give. */
    public final Map<String, String> stopped = new ConcurrentHashMap<>();
    /**
     * Instances (by id) that are paused through {@link #pauseControl()}; shared with a "restarted"
     * backend to model a pause that outlives the daemon.
     */
    public volatile Set<String> paused = ConcurrentHashMap.newKeySet();
    /** How many times {@link #hibernation()} saved an instance, and woke one. */
    public final AtomicLong saves = new AtomicLong();
    public final AtomicLong wakes = new AtomicLong();
    /** Whether a wake fails (as a backend that cannot start the saved state again). */
    public volatile boolean failWake;
    /** What {@link #capabilities()} reports. */
    public volatile Set<String> capabilities = Set.of(Capability.EXEC, Capability.MEMORY_LIMIT);
    /** What {@link #machine()} answers. */
    public volatile boolean machine;
    /** What the instances answer to {@link SandboxInstance#channelOutlivesBackend()}. */
    public volatile boolean channelOutlivesBackend;
    /**
     * When set, instances are VMs with these checkpoints (and can be stopped and started): register
     * {@link FakeCheckpoints#checkpoints()} and {@link FakeCheckpoints#power()} as its seams.
     */
    public volatile FakeCheckpoints checkpoints;

    public FakeBackend(String name, Set<Long> running) {
        this.name = name;
        this.running = running;
    }

    public FakeBackend(Set<Long> running) {
        this("fake", running);
    }

    public FakeBackend() {
        this(ConcurrentHashMap.newKeySet());
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<String> capabilities() {
        return capabilities;
    }

    @Override
    public boolean machine() {
        return machine;
    }

    @Override
    public Map<String, String> details() {
        if (failDetails) {
            throw new IllegalStateException("no details today");
        }
        return Map.of(DETAIL_AGENT, "in-memory");
    }

    @Override
    public Availability availability() {
        return Availability.yes();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
        creates.add(spec);
        if (failCreate != null) {
            throw failCreate;
        }
        return launch(spec, Map.of());
    }

    /** Starts a new "process" for {@code spec}. */
    SandboxInstance launch(InstanceSpec spec, Map<String, String> extra) {
        long pid = PIDS.incrementAndGet();
        running.add(pid);
        Map<String, String> data = new java.util.HashMap<>(extra);
        data.put("pid", String.valueOf(pid));
        return wrap(spec, instance(spec, new InstanceState(pid, data)));
    }

    SandboxInstance wrap(InstanceSpec spec, SandboxInstance i) {
        FakeCheckpoints c = checkpoints;
        return c == null ? i : c.wrap(this, spec, i);
    }

    /** A stopped VM: nothing runs, the state says so, and adopt finds it stopped. */
    SandboxInstance stoppedInstance(InstanceSpec spec, long pid) {
        return instance(spec, new InstanceState(pid, Map.of("pid", String.valueOf(pid), "stopped", "true")));
    }

    static boolean isStopped(InstanceState state) {
        return "true".equals(state.data().get("stopped"));
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        if (isCold(state)) {
            running.remove(state.pid()); // what still ran of it (a daemon killed before the release)
            return instance(spec, state);
        }
        if (!running.contains(state.pid()) && !isStopped(state)) {
            throw new InstanceGoneException("pid " + state.pid() + " is gone");
        }
        return wrap(spec, instance(spec, state));
    }

    private static boolean isCold(InstanceState state) {
        return "true".equals(state.data().get("cold"));
    }

    /**
     * The hibernation seam of this backend, which core finds only if the test registers it: a saved
     * instance's state says {@code cold}, its pid no longer runs, and a wake gives it a new pid.
     */
    public Hibernation hibernation() {
        return new Hibernation() {
            @Override
            public InstanceState save(SandboxInstance instance, OperationContext context) {
                saves.incrementAndGet();
                Map<String, String> data = new java.util.HashMap<>(instance.state().data());
                data.put("cold", "true");
                return new InstanceState(instance.state().pid(), data);
            }

            @Override
            public SandboxInstance release(SandboxInstance instance, InstanceState saved) {
                running.remove(saved.pid());
                paused.remove(instance.id());
                return instance(new InstanceSpec(instance.id(), java.nio.file.Path.of("/"), null), saved);
            }

            @Override
            public SandboxInstance wake(SandboxInstance cold, OperationContext context) {
                if (failWake) {
                    throw new IllegalStateException("no room to start " + cold.id() + " again");
                }
                wakes.incrementAndGet();
                long pid = cold.state().pid() + 100_000;
                running.add(pid);
                Map<String, String> data = new java.util.HashMap<>(cold.state().data());
                data.remove("cold");
                data.put("pid", String.valueOf(pid));
                return instance(new InstanceSpec(cold.id(), java.nio.file.Path.of("/"), null), new InstanceState(pid, data));
            }

            @Override
            public boolean cold(SandboxInstance instance) {
                return isCold(instance.state());
            }
        };
    }

    /** The pause seam of this backend, which core finds only if the test registers it. */
    public PauseControl pauseControl() {
        return new PauseControl() {
            @Override
            public void pause(SandboxInstance instance) {
                paused.add(instance.id());
            }

            @Override
            public void resume(SandboxInstance instance) {
                paused.remove(instance.id());
            }
        };
    }

    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        running.remove(state.pid());
    }

    private SandboxInstance instance(InstanceSpec spec, InstanceState state) {
        return new SandboxInstance() {
            @Override
            public String id() {
                return spec.id();
            }

            @Override
            public InstanceState state() {
                return state;
            }

            @Override
            public boolean alive() {
                return isCold(state) || running.contains(state.pid()) && !stopped.containsKey(spec.id());
            }

            @Override
            public SandboxStatus status() {
                if (stopped.containsKey(spec.id())) {
                    return SandboxStatus.STOPPED;
                }
                return alive() && (paused.contains(spec.id()) || isCold(state)) ? SandboxStatus.PAUSED
                        : SandboxInstance.super.status();
            }

            @Override
            public String reason() {
                return stopped.getOrDefault(spec.id(), running.contains(state.pid()) ? null : "the test ended pid " + state.pid());
            }

            @Override
            public String workspace() {
                return "/work";
            }

            @Override
            public boolean channelOutlivesBackend() {
                return channelOutlivesBackend;
            }

            @Override
            public Optional<ResourceUsage> usage() {
                return Optional.of(new ResourceUsage(4096L, 0.5, null));
            }

            @Override
            public GuestChannel channel() {
                return new GuestChannel() {
                    @Override
                    public PingResult ping() {
                        return new PingResult(true, 1, 0.1);
                    }

                    @Override
                    public ExecResult exec(ExecRequest request) {
                        execs.add(request);
                        return new ExecResult(String.join(" ", request.args()), "", 0, false, false, 1);
                    }

                    @Override
                    public byte[] readFile(String path, int maxBytes) {
                        byte[] b = files.get(path);
                        if (b == null) {
                            throw ApiException.notFound("no file " + path);
                        }
                        return b;
                    }

                    @Override
                    public void writeFile(String path, byte[] content) {
                        files.put(path, content.clone());
                    }
                };
            }
        };
    }
}
