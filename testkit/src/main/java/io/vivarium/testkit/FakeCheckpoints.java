package io.vivarium.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.ResourceUsage;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.GuestLimits;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.SandboxInstance;

/**
 * A VM's checkpoints for {@link FakeBackend}: given to {@link FakeBackend#checkpoints}, every
 * instance the backend makes or adopts is a VM that {@link #checkpoints()} and {@link #power()},
 * the seams a test registers beside the backend, can checkpoint, stop and start.
 * The guest is modelled by {@link #files} (its disk) and {@link #processes} (its memory), which a
 * checkpoint copies and a restore puts back. Its channel answers {@link #LIST} with a guest listing
 * of {@link #files} and runs {@code sh -c COMMAND} by handing COMMAND to {@link #commands}, so a test
 * says what a command does to the guest. Knobs make a restore fail, relaunch (a new pid, as QEMU
 * from a RAM file) or wait on a latch.
 */
public final class FakeCheckpoints {
    /** The program a test fingerprint mode's guest listing command names: {@code [LIST, dirs...]}. */
    public static final String LIST = "fake-list";

    /** The guest's files: path to content. */
    public final Map<String, String> files = new ConcurrentHashMap<>();
    /** What runs in the guest's memory (background processes by name). */
    public final Set<String> processes = ConcurrentHashMap.newKeySet();
    /** The checkpoints, by tag. */
    public final Map<String, Saved> saved = new ConcurrentHashMap<>();
    /** Every clock the channel was set to, in order. */
    public final List<Instant> clockSets = new CopyOnWriteArrayList<>();
    /** Every command run with {@code sh -c}, in order. */
    public final List<String> commandsRun = new CopyOnWriteArrayList<>();
    /** What a {@code sh -c} command does to the guest; may throw. */
    public volatile Consumer<String> commands = c -> {
    };
    /** Runs as a checkpoint is taken, before anything is saved; may throw to cut it short. */
    public volatile Runnable beforeCreate = () -> {
    };
    /** Runs as the channel is asked to set the clock, before it is recorded; may throw or take its time. */
    public volatile Runnable onSetTime = () -> {
    };
    public volatile RuntimeException failRestore;
    public volatile RuntimeException failDelete;
    /** Runs as a checkpoint is deleted, before anything is removed. */
    public volatile Runnable beforeDelete = () -> {
    };
    /** When true, a restore relaunches the instance under a new pid. */
    public volatile boolean relaunch;
    /** When set, a restore counts this down and then waits for {@link #releaseRestore}. */
    public volatile CountDownLatch restoreEntered;
    public final CountDownLatch releaseRestore = new CountDownLatch(1);
    /** When set, a command counts this down and then waits for {@link #releaseCommand}. */
    public volatile CountDownLatch commandEntered;
    public final CountDownLatch releaseCommand = new CountDownLatch(1);

    /** A checkpoint: the guest's files and processes when it was taken. */
    public record Saved(CheckpointInfo info, Map<String, String> files, Set<String> processes) {
    }

    SandboxInstance wrap(FakeBackend backend, InstanceSpec spec, SandboxInstance instance) {
        return new Vm(backend, spec, instance);
    }

    /** The checkpoints seam: what a test registers for the backend these checkpoints were given to. */
    public Checkpoints checkpoints() {
        return new Checkpoints() {
            @Override
            public CheckpointInfo create(SandboxInstance instance, String tag, OperationContext context) {
                return vm(instance).create(tag);
            }

            @Override
            public SandboxInstance restore(SandboxInstance instance, String tag, OperationContext context) {
                return vm(instance).restore(tag);
            }

            @Override
            public boolean delete(SandboxInstance instance, String tag) {
                vm(instance);
                return FakeCheckpoints.this.delete(tag);
            }

            @Override
            public List<CheckpointInfo> list(SandboxInstance instance) {
                vm(instance);
                return FakeCheckpoints.this.list();
            }
        };
    }

    /** The power-control seam, for the same backend. */
    public PowerControl power() {
        return new PowerControl() {
            @Override
            public SandboxInstance stop(SandboxInstance instance, OperationContext context) {
                return vm(instance).stop();
            }

            @Override
            public SandboxInstance start(SandboxInstance instance, OperationContext context) {
                return vm(instance).start();
            }
        };
    }

    private static Vm vm(SandboxInstance instance) {
        if (!(instance instanceof Vm vm)) {
            throw new IllegalArgumentException("not an instance of a fake VM backend: " + instance);
        }
        return vm;
    }

    private boolean delete(String tag) {
        beforeDelete.run();
        if (failDelete != null) {
            throw failDelete;
        }
        return saved.remove(tag) != null;
    }

    private List<CheckpointInfo> list() {
        return saved.values().stream().map(Saved::info)
                .sorted(java.util.Comparator.comparingLong(CheckpointInfo::createdAtUnix)).toList();
    }

    private static void await(CountDownLatch entered, CountDownLatch release) {
        if (entered == null) {
            return;
        }
        entered.countDown();
        try {
            if (!release.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released the fake");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private final class Vm implements SandboxInstance {
        private final FakeBackend backend;
        private final InstanceSpec spec;
        private final SandboxInstance inner;

        Vm(FakeBackend backend, InstanceSpec spec, SandboxInstance inner) {
            this.backend = backend;
            this.spec = spec;
            this.inner = inner;
        }

        CheckpointInfo create(String tag) {
            beforeCreate.run();
            if (saved.containsKey(tag)) {
                throw ApiException.conflict("checkpoint " + tag + " exists");
            }
            CheckpointInfo info = new CheckpointInfo(tag, Instant.now().getEpochSecond(), 4096L, "fake");
            saved.put(tag, new Saved(info, Map.copyOf(files), Set.copyOf(processes)));
            return info;
        }

        SandboxInstance restore(String tag) {
            await(restoreEntered, releaseRestore);
            Saved s = saved.get(tag);
            if (s == null) {
                throw ApiException.notFound("no checkpoint " + tag);
            }
            if (failRestore != null) {
                throw failRestore;
            }
            files.clear();
            files.putAll(s.files());
            processes.clear();
            processes.addAll(s.processes());
            if (!relaunch && !stopped()) {
                return this;
            }
            backend.running.remove(state().pid());
            return backend.launch(spec, Map.of());
        }

        SandboxInstance stop() {
            backend.running.remove(state().pid());
            processes.clear();
            return backend.wrap(spec, backend.stoppedInstance(spec, state().pid()));
        }

        SandboxInstance start() {
            return backend.launch(spec, Map.of());
        }

        private boolean stopped() {
            return FakeBackend.isStopped(state());
        }

        @Override
        public String id() {
            return inner.id();
        }

        @Override
        public InstanceState state() {
            return inner.state();
        }

        @Override
        public boolean alive() {
            return inner.alive();
        }

        @Override
        public SandboxStatus status() {
            return inner.status();
        }

        @Override
        public String workspace() {
            return inner.workspace();
        }

        @Override
        public Optional<HostFiles> hostFiles() {
            return Optional.empty();
        }

        @Override
        public Optional<ResourceUsage> usage() {
            return inner.usage();
        }

        @Override
        public GuestChannel channel() {
            GuestChannel c = inner.channel();
            return new GuestChannel() {
                @Override
                public PingResult ping() {
                    return c.ping();
                }

                @Override
                public ExecResult exec(ExecRequest request) {
                    List<String> args = request.args();
                    if (args.get(0).equals(LIST)) {
                        return listing(args.subList(1, args.size()));
                    }
                    if (args.size() == 3 && args.get(0).equals("sh") && args.get(1).equals("-c")) {
                        commandsRun.add(args.get(2));
                        await(commandEntered, releaseCommand);
                        commands.accept(args.get(2));
                        return new ExecResult("ran " + args.get(2), "", 0, false, false, 1);
                    }
                    return c.exec(request);
                }

                @Override
                public GuestLimits limits() {
                    return c.limits();
                }

                @Override
                public EvalResult evaluate(String code, int timeoutSecs) {
                    return c.evaluate(code, timeoutSecs);
                }

                @Override
                public void readFile(String path, long maxBytes, OutputStream out) throws IOException {
                    c.readFile(path, maxBytes, out);
                }

                @Override
                public void writeFile(String path, InputStream in, long maxBytes) throws IOException {
                    c.writeFile(path, in, maxBytes);
                }

                @Override
                public void writeFile(String path, byte[] content) {
                    c.writeFile(path, content);
                }

                @Override
                public byte[] readFile(String path, int maxBytes) {
                    return c.readFile(path, maxBytes);
                }

                @Override
                public void setTime(Instant now) {
                    onSetTime.run();
                    clockSets.add(now);
                }

                @Override
                public void freezeFilesystems(List<String> mountpoints, Duration timeout) {
                    c.freezeFilesystems(mountpoints, timeout);
                }
            };
        }
    }

    /** {@code <content> TAB <path> NUL} for each file below one of {@code dirs}, as a guest listing prints. */
    private ExecResult listing(List<String> dirs) {
        Map<String, String> below = new TreeMap<>();
        files.forEach((path, content) -> {
            if (dirs.stream().anyMatch(d -> path.startsWith(d.endsWith("/") ? d : d + "/"))) {
                below.put(path, content);
            }
        });
        StringBuilder out = new StringBuilder();
        below.forEach((path, content) -> out.append(Integer.toHexString(content.hashCode())).append('\t').append(path).append('\0'));
        return new ExecResult(out.toString(), "", 0, false, false, 1);
    }
}
