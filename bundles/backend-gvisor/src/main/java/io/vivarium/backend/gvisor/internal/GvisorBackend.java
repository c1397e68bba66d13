package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.agent.AgentBinary;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.process.ProcessStarts;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Sandboxes as gVisor containers: an OCI bundle this backend writes ({@link OciSpec}), started
 * detached by runsc ({@link Runsc}) with our agent as process 1, reached on the agent's socket in
 * a host directory bound into the container, which runsc's gofer creates on the host
 * ({@code --host-uds=create}; {@link GvisorInstance}). Containers outlive the daemon
 * and are found again from their record ({@link ContainerRecord}) and runsc's state.
 */
final class GvisorBackend implements SandboxBackend, AutoCloseable {

    static final String NAME = "gvisor";
    /** Where a create records its container id before runsc runs, for a destroy after a daemon died mid-create. */
    private static final String CONTAINER_ID_FILE = "container-id";
    private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");
    private static final System.Logger LOG = System.getLogger(GvisorBackend.class.getName());

    private final GvisorSettings settings;
    private final Runsc runsc;
    /** The containers this revision created or adopted, let go of when it closes. */
    private final Map<String, GvisorInstance> instances = new ConcurrentHashMap<>();
    private volatile Path agentBinary;
    private volatile String version;

    GvisorBackend(GvisorSettings settings) {
        this.settings = settings;
        this.runsc = new Runsc(settings.runsc());
    }

    @Override
    public String name() {
        return NAME;
    }

    /**
     * Sandboxes with a memory limit, pause ({@code runsc pause}) and eval (the agent's warm
     * interpreter, the root filesystem's python3); no snapshots, checkpoints, forks or dry-runs yet.
     */
    @Override
    public Capabilities capabilities() {
        return new Capabilities(true, false, false, false, false, false, true, true, true, false, false, false,
                false);
    }

    @Override
    public Map<String, String> details() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(DETAIL_PLATFORM, Runsc.PLATFORM_REASON);
        d.put(DETAIL_ISOLATION, "a gVisor sandbox per container (" + (version == null ? "runsc" : version)
                + "), without a network");
        d.put(DETAIL_AGENT, "vivarium-agent as the container's process 1, on a Unix socket bound in from the host");
        d.put("rootfs", settings.rootfs().map(p -> p + " (read-only)")
                .orElse("the host's /usr, read-only (rootfs=host)"));
        d.put("sandbox_user", "uid " + settings.uid() + ", gid " + settings.gid());
        d.put("not_yet", "snapshots, forks and branches, checkpoints and dry-run by checkpoint: later "
                + "slices; pids_limit and disk_limit_mib are refused (501)");
        return d;
    }

    /** Checked on every call, so installing runsc or building the root filesystem makes the backend available. */
    @Override
    public Availability availability() {
        if (!Files.isExecutable(settings.runsc())) {
            return Availability.no(settings.runsc() + " is missing: apt-get install runsc");
        }
        if (!isRoot()) {
            return Availability.no("runsc needs the daemon to run as root");
        }
        Optional<Path> rootfs = settings.rootfs();
        if (rootfs.isPresent() && !Files.isDirectory(rootfs.get().resolve("usr"))) {
            return Availability.no("no root filesystem at " + rootfs.get() + ": build it with "
                    + "bundles/backend-gvisor/build-rootfs.sh, or set rootfs (a directory, or 'host' for the host's /usr)");
        }
        if (version == null) {
            try {
                version = runsc.version();
            } catch (IOException e) {
                return Availability.no(settings.runsc() + " does not run: " + e.getMessage());
            }
        }
        return Availability.yes();
    }

    private static boolean isRoot() {
        try {
            return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public SandboxInstance create(InstanceSpec spec) {
        return create(spec, OperationContext.until(Instant.now().plus(settings.startTimeout()).plusSeconds(30)));
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, OperationContext context) {
        Availability availability = availability();
        if (!availability.available()) {
            throw new ApiException(503, availability.reason());
        }
        if (spec.pidsLimit() != null) {
            throw ApiException.notImplemented("pids_limit is not supported by gvisor yet: runsc 2022 applies a "
                    + "pids cgroup to the sandbox's host threads (the ptrace platform's stubs), and a guest that "
                    + "reaches it kills the whole sandbox; omit it");
        }
        if (spec.diskLimitMib() != null) {
            throw ApiException.notImplemented("disk_limit_mib is not supported by gvisor yet: the workspace is a host "
                    + "directory; omit it");
        }
        ContainerFiles files = ContainerFiles.of(spec.dir(), settings.linkDir(), spec.id());
        String containerId = "vivarium-" + spec.id() + "-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
        Instant deadline = Instant.now().plus(settings.startTimeout());
        GvisorInstance instance = null;
        boolean started = false;
        try {
            files.prepare(settings.uid(), settings.gid());
            AtomicFiles.write(spec.dir().resolve(CONTAINER_ID_FILE), containerId.getBytes(StandardCharsets.UTF_8));
            Path root = settings.rootfs().orElse(files.skeleton());
            if (settings.rootfs().isEmpty()) {
                OciSpec.writeSkeleton(files.skeleton());
            }
            AtomicFiles.write(files.config(), OciSpec.bytes(OciSpec.of(spec.id(), root, settings.rootfs().isEmpty(),
                    agentBinary().getParent(), files, settings.uid(), settings.gid(), spec.memoryLimitMib())));
            context.checkpoint("starting the container");
            started = true;
            runsc.runDetached(files, containerId, Duration.between(Instant.now(), deadline).plusSeconds(1));
            Runsc.ContainerState state = runsc.state(files, containerId)
                    .filter(Runsc.ContainerState::running)
                    .orElseThrow(() -> new IOException("the container exited right after it started: " + files.logTail()));
            String startTime = ProcessStarts.liveStartTime(state.pid())
                    .orElseThrow(() -> new IOException("the container's sandbox (pid " + state.pid() + ") is gone"));
            instance = new GvisorInstance(spec.id(), new ContainerRecord(containerId, state.pid(), startTime, files,
                    settings.uid(), settings.gid()), false);
            instance.awaitAgent(deadline, context);
            register(instance);
            return instance;
        } catch (IOException | RuntimeException e) {
            if (instance != null) {
                instance.close();
            }
            if (started) {
                remove(files, containerId, e);
            }
            try {
                files.remove();
            } catch (IOException removing) {
                e.addSuppressed(removing);
            }
            if (e instanceof ApiException api) {
                throw api;
            }
            if (e instanceof Runsc.StartFailure failure && failure.outOfMemory() && spec.memoryLimitMib() != null) {
                throw ApiException.badRequest("memory_limit_mib " + spec.memoryLimitMib() + " is too small for a "
                        + "gVisor sandbox (its sentry and gofer run in that cgroup too): " + e.getMessage());
            }
            throw ApiException.internal("sandbox " + spec.id() + " failed to start: " + e.getMessage(), e);
        }
    }

    private Path agentBinary() throws IOException {
        Path binary = agentBinary;
        if (binary == null) {
            binary = AgentBinary.install(settings.agentDir());
            agentBinary = binary;
        }
        return binary;
    }

    private void register(GvisorInstance instance) {
        GvisorInstance replaced = instances.put(instance.id(), instance);
        if (replaced != null && replaced != instance) {
            replaced.close();
        }
    }

    /**
     * Adopts a recorded container that runsc still runs (or keeps paused), with the same sandbox
     * process; reconnects to its agent.
     */
    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        ContainerRecord record;
        try {
            record = ContainerRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            throw new InstanceGoneException(e.getMessage());
        }
        if (!record.running()) {
            throw new InstanceGoneException("the gVisor sandbox (pid " + record.sandboxPid() + ") of container "
                    + record.containerId() + " is gone; runsc's last words: " + record.files().logTail());
        }
        boolean paused;
        try {
            Optional<Runsc.ContainerState> runscState = runsc.state(record.files(), record.containerId());
            if (runscState.filter(s -> s.running() || s.paused()).isEmpty()) {
                throw new InstanceGoneException("runsc says container " + record.containerId() + " is "
                        + runscState.map(Runsc.ContainerState::status).orElse("unknown to it"));
            }
            paused = runscState.get().paused();
            record.files().relink();
        } catch (IOException e) {
            throw ApiException.internal("cannot adopt sandbox " + spec.id() + ": " + e.getMessage(), e);
        }
        GvisorInstance instance = new GvisorInstance(spec.id(), record, paused);
        register(instance);
        return instance;
    }

    /** {@code runsc pause}: every process of the container frozen, its agent too (core answers 409 meanwhile). */
    @Override
    public void pause(SandboxInstance instance) {
        GvisorInstance container = container(instance);
        try {
            runsc.pause(container.record().files(), container.record().containerId());
        } catch (IOException e) {
            throw ApiException.internal("cannot pause sandbox " + instance.id() + ": " + e.getMessage(), e);
        }
        container.paused(true);
    }

    @Override
    public void resume(SandboxInstance instance) {
        GvisorInstance container = container(instance);
        try {
            runsc.resume(container.record().files(), container.record().containerId());
        } catch (IOException e) {
            throw ApiException.internal("cannot resume sandbox " + instance.id() + ": " + e.getMessage(), e);
        }
        container.paused(false);
    }

    private static GvisorInstance container(SandboxInstance instance) {
        if (instance instanceof GvisorInstance container) {
            return container;
        }
        throw new IllegalArgumentException("not a container of the gvisor backend: " + instance.id());
    }

    /** Kills and deletes the container (also one that already died) and removes its files. Idempotent. */
    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        GvisorInstance live = instances.remove(spec.id());
        if (live != null) {
            live.close();
        }
        ContainerFiles files;
        String containerId;
        try {
            ContainerRecord record = ContainerRecord.fromData(state.data());
            files = record.files();
            containerId = record.containerId();
        } catch (IllegalArgumentException e) {
            // no recorded state: the daemon stopped before create returned
            files = ContainerFiles.of(spec.dir(), settings.linkDir(), spec.id());
            containerId = recordedContainerId(spec.dir()).orElse(null);
        }
        RuntimeException failure = new RuntimeException();
        if (containerId != null) {
            remove(files, containerId, failure);
        }
        try {
            files.remove();
            Files.deleteIfExists(spec.dir().resolve(CONTAINER_ID_FILE));
        } catch (IOException e) {
            failure.addSuppressed(e);
        }
        if (failure.getSuppressed().length > 0) {
            throw ApiException.internal("cannot remove sandbox " + spec.id() + ": "
                    + failure.getSuppressed()[0].getMessage(), failure.getSuppressed()[0]);
        }
    }

    private static Optional<String> recordedContainerId(Path dir) {
        try {
            return Optional.of(Files.readString(dir.resolve(CONTAINER_ID_FILE)).strip());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /**
     * {@code runsc kill} then {@code runsc delete --force}, the container running, paused or not; a
     * container runsc does not know (never started, or deleted already) is fine. Then its cgroups,
     * which a start that failed half-way leaves behind. What fails is added to {@code failures}.
     */
    private void remove(ContainerFiles files, String containerId, Exception failures) {
        boolean known = true;
        boolean paused = false;
        try {
            Optional<Runsc.ContainerState> state = runsc.state(files, containerId);
            known = state.isPresent();
            paused = state.filter(Runsc.ContainerState::paused).isPresent();
        } catch (IOException e) {
            // a state root runsc cannot read: delete may still clean up
            LOG.log(System.Logger.Level.DEBUG, "runsc state " + containerId + ": " + e.getMessage());
        }
        if (paused) {
            try {
                // runsc 2022's delete panics on a paused container ("invalid state transition: paused => stopped")
                runsc.resume(files, containerId);
            } catch (IOException e) {
                failures.addSuppressed(e);
            }
        }
        if (known) {
            try {
                runsc.kill(files, containerId);
            } catch (IOException e) {
                // a container that already stopped cannot be signalled: delete removes it all the same
                LOG.log(System.Logger.Level.DEBUG, "runsc kill " + containerId + ": " + e.getMessage());
            }
            try {
                runsc.delete(files, containerId);
            } catch (IOException e) {
                failures.addSuppressed(e);
            }
        }
        try {
            ContainerCgroups.remove(CGROUP_ROOT, containerId);
        } catch (IOException e) {
            failures.addSuppressed(e);
        }
    }

    /** Lets go of every container; they keep running for the next revision or daemon to adopt. */
    @Override
    public void close() {
        instances.values().forEach(GvisorInstance::close);
        instances.clear();
    }
}
