package io.vivarium.core.internal;

import java.util.List;
import java.util.Optional;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.ApiException;
import io.vivarium.api.PingResult;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

/** An in-memory backend: "processes" are pids in a set shared across backend versions. */
final class FakeBackend implements SandboxBackend {
    static final AtomicLong PIDS = new AtomicLong(1000);

    final String name;
    final Set<Long> running;
    final List<ExecRequest> execs = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Files "inside" every instance, by path. */
    final Map<String, byte[]> files = new ConcurrentHashMap<>();
    final List<InstanceSpec> created = new java.util.concurrent.CopyOnWriteArrayList<>();
    volatile RuntimeException failCreate;
    volatile boolean failDetails;
    volatile Capabilities capabilities = new Capabilities(true, false, false, false, false, false, false, false, true);

    FakeBackend(String name, Set<Long> running) {
        this.name = name;
        this.running = running;
    }

    FakeBackend(Set<Long> running) {
        this("fake", running);
    }

    FakeBackend() {
        this(ConcurrentHashMap.newKeySet());
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Capabilities capabilities() {
        return capabilities;
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
    public SandboxInstance create(InstanceSpec spec) {
        if (failCreate != null) {
            throw failCreate;
        }
        created.add(spec);
        long pid = PIDS.incrementAndGet();
        running.add(pid);
        return instance(spec, new InstanceState(pid, Map.of("pid", String.valueOf(pid))));
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        if (!running.contains(state.pid())) {
            throw new InstanceGoneException("pid " + state.pid() + " is gone");
        }
        return instance(spec, state);
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
                return running.contains(state.pid());
            }

            @Override
            public String workspace() {
                return "/work";
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
