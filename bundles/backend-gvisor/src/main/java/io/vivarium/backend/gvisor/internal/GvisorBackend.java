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
import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.process.ProcessStarts;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
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
    /** How long the agent may take to close its sockets before a checkpoint (a few milliseconds, measured). */
    private static final Duration RELEASE_WAIT = Duration.ofSeconds(5);
    private static final long RELEASE_RETRY_MILLIS = 5;
    private static final System.Logger LOG = System.getLogger(GvisorBackend.class.getName());

    private final GvisorSettings settings;
    private final Runsc runsc;
    /** The containers this revision created or adopted, let go of when it closes. */
    private final Map<String, GvisorInstance> instances = new ConcurrentHashMap<>();
    private final GvisorImages images = new GvisorImages(this);
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

    /** Snapshots, branches and forks of these containers. */
    GvisorImages images() {
        return images;
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
        d.put("images", "files and memory: a snapshot or branch is a runsc checkpoint (every process's memory, /tmp) "
                + "and the workspace copied while the container is paused, which then runs on; a child is restored "
                + "from the checkpoint with its own copy of the workspace; the root filesystem is shared, read-only; "
                + "needs runsc " + Runsc.IN_PLACE_SINCE + " or newer");
        d.put("not_yet", "pids_limit and disk_limit_mib are refused (501)");
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
        return start(spec, new Start(spec.memoryLimitMib(), settings.rootfs(), null, files -> { }), context);
    }

    /**
     * How a container starts: fresh ({@code checkpoint} null), or restored from a checkpoint whose
     * root filesystem, memory limit and workspace ({@code prepare} fills it) it must have.
     *
     * @param rootfs the root filesystem, or empty for the host's /usr layout
     */
    record Start(Integer memoryLimitMib, Optional<Path> rootfs, Path checkpoint, Prepare prepare) {
    }

    /** Fills a new container's workspace before it starts. */
    @FunctionalInterface
    interface Prepare {
        void workspace(ContainerFiles files) throws IOException;
    }

    /** Writes the bundle, starts (or restores) the container, waits for its agent; undoes it all on failure. */
    GvisorInstance start(InstanceSpec spec, Start how, OperationContext context) {
        ContainerFiles files = ContainerFiles.of(spec.dir(), settings.linkDir(), spec.id());
        String containerId = newContainerId(spec.id());
        Instant deadline = Instant.now().plus(settings.startTimeout());
        GvisorInstance instance = null;
        boolean started = false;
        try {
            files.prepare(settings.uid(), settings.gid());
            how.prepare().workspace(files);
            AtomicFiles.write(spec.dir().resolve(CONTAINER_ID_FILE), containerId.getBytes(StandardCharsets.UTF_8));
            Path root = how.rootfs().orElse(files.skeleton());
            if (how.rootfs().isEmpty()) {
                OciSpec.writeSkeleton(files.skeleton());
            }
            AtomicFiles.write(files.config(), OciSpec.bytes(OciSpec.of(spec.id(), root, how.rootfs().isEmpty(),
                    agentBinary().getParent(), files, settings.uid(), settings.gid(), how.memoryLimitMib())));
            context.checkpoint("starting the container");
            started = true;
            ContainerRecord record;
            if (how.checkpoint() == null) {
                runsc.runDetached(files, containerId, Duration.between(Instant.now(), deadline).plusSeconds(1));
                record = running(files, containerId, "started");
            } else {
                record = restore(files, containerId, how.checkpoint(), deadline, context);
            }
            instance = new GvisorInstance(spec.id(), record, this, false);
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
                Files.deleteIfExists(spec.dir().resolve(CONTAINER_ID_FILE));
            } catch (IOException removing) {
                e.addSuppressed(removing);
            }
            if (e instanceof ApiException api) {
                throw api;
            }
            if (e instanceof Runsc.StartFailure failure && failure.outOfMemory() && how.memoryLimitMib() != null) {
                throw ApiException.badRequest("memory_limit_mib " + how.memoryLimitMib() + " is too small for a "
                        + "gVisor sandbox (its sentry and gofer run in that cgroup too): " + e.getMessage());
            }
            throw ApiException.internal("sandbox " + spec.id() + " failed to " + (how.checkpoint() == null ? "start"
                    : "be restored from " + how.checkpoint()) + ": " + e.getMessage(), e);
        }
    }

    /**
     * The record of the container runsc just started detached, by the pid it wrote
     * ({@link ContainerFiles#sandboxPidFile}; one {@code runsc state} less per start, each a Go
     * binary starting: 20-150 ms under load).
     */
    private ContainerRecord running(ContainerFiles files, String containerId, String what) throws IOException {
        long pid;
        try {
            pid = Long.parseLong(Files.readString(files.sandboxPidFile(), StandardCharsets.UTF_8).strip());
        } catch (NoSuchFileException | NumberFormatException e) {
            throw new IOException("runsc named no sandbox process after the container " + what + ": " + files.logTail(), e);
        }
        String startTime = ProcessStarts.liveStartTime(pid).orElseThrow(() -> new IOException(
                "the container exited right after it " + what + " (its sandbox, pid " + pid + ", is gone): " + files.logTail()));
        return new ContainerRecord(containerId, pid, startTime, files, settings.uid(), settings.gid());
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
        try {
            record = record.current();
        } catch (IOException e) {
            throw new InstanceGoneException(e.getMessage());
        }
        RuntimeException leftovers = new RuntimeException();
        removeUnrecordedRestore(record.files(), record.containerId(), leftovers);
        try {
            record.files().finishWorkspaceSwap();
        } catch (IOException e) {
            leftovers.addSuppressed(e);
        }
        for (Throwable t : leftovers.getSuppressed()) {
            LOG.log(System.Logger.Level.WARNING, "sandbox " + spec.id() + ": " + t.getMessage());
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
            boolean ranOn = false;
            if (Files.exists(record.files().checkpointing())) {
                // a daemon killed during checkpointAndResume: the pause and the agent's deafness are its, not the caller's
                runOnAfterCheckpoint(record);
                paused = false;
                ranOn = true;
            }
            record.files().relink();
            GvisorInstance instance = new GvisorInstance(spec.id(), record, this, paused);
            if (ranOn) {
                Instant deadline = Instant.now().plus(settings.startTimeout());
                instance.awaitAgent(deadline, OperationContext.until(deadline));
            }
            register(instance);
            return instance;
        } catch (IOException e) {
            throw ApiException.internal("cannot adopt sandbox " + spec.id() + ": " + e.getMessage(), e);
        }
    }

    /**
     * Runs on a container a checkpoint left frozen or deaf (its {@code checkpointing} mark): resumes
     * it if runsc says it is paused, asks its agent to listen again, removes the mark. The mark
     * stays if the resume fails, so that a resume or the next adopt tries again.
     */
    private void runOnAfterCheckpoint(ContainerRecord record) throws IOException {
        if (runsc.state(record.files(), record.containerId()).filter(Runsc.ContainerState::paused).isPresent()) {
            runsc.resume(record.files(), record.containerId());
        }
        relisten(record);
        Files.deleteIfExists(record.files().checkpointing());
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

    /** {@code runsc resume}; of a container a failed checkpoint left frozen, its agent is woken too. */
    @Override
    public void resume(SandboxInstance instance) {
        GvisorInstance container = container(instance);
        ContainerRecord record = container.record();
        try {
            if (Files.exists(record.files().checkpointing())) {
                runOnAfterCheckpoint(record);
                container.paused(false);
                // the agent binds its socket again a moment after SIGUSR2: the caller's next exec must find it listening
                Instant deadline = Instant.now().plus(settings.startTimeout());
                container.awaitAgent(deadline, OperationContext.until(deadline));
            } else {
                runsc.resume(record.files(), record.containerId());
            }
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
            ContainerRecord record = currentOrRecorded(ContainerRecord.fromData(state.data()));
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
        removeUnrecordedRestore(files, containerId, failure);
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

    /** The record a restore left (another container and sandbox process), else the one core persisted. */
    private static ContainerRecord currentOrRecorded(ContainerRecord recorded) {
        try {
            return recorded.current();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, e.getMessage());
            return recorded;
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
     * Removes the container {@link ContainerFiles#restoring()} names unless it is {@code current}:
     * one a restore started and a daemon killed meanwhile, or a restore that failed, did not
     * record. The file goes once that container is gone. What fails is added to {@code failures}.
     */
    private void removeUnrecordedRestore(ContainerFiles files, String current, Exception failures) {
        String restoring;
        try {
            restoring = Files.readString(files.restoring(), StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            return;
        } catch (IOException e) {
            failures.addSuppressed(e);
            return;
        }
        int failed = failures.getSuppressed().length;
        if (!restoring.isEmpty() && !restoring.equals(current)) {
            remove(files, restoring, failures);
        }
        if (failures.getSuppressed().length == failed) {
            try {
                Files.deleteIfExists(files.restoring());
            } catch (IOException e) {
                failures.addSuppressed(e);
            }
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

    /**
     * Writes a checkpoint of the running container to {@code image} and runs {@code whileStopped}
     * while its processes are still frozen (its workspace quiet), then lets them run on in the same
     * sandbox process: {@code runsc pause}, {@code runsc checkpoint --leave-running} (which leaves a
     * paused container paused), {@code whileStopped}, {@code runsc resume}. runsc cannot save a
     * socket bound on or connected to the host (its message: "Cannot save endpoint with bound host
     * socket"), which the agent's is: the agent is asked to close its listener and connections
     * first ({@code SIGUSR1} to its supervisor, which tells the worker) and to listen again after
     * ({@code SIGUSR2}); a checkpoint refused for that is tried again until they are closed. The
     * container runs on and its agent listens again whether or not this succeeds.
     *
     * @return how long the container's processes were frozen, in milliseconds: from when
     *         {@code runsc pause} returned to when {@code runsc resume} did
     */
    long checkpointAndResume(GvisorInstance instance, Path image, WhileStopped whileStopped,
            OperationContext context) throws IOException {
        ContainerRecord record = instance.record();
        if (!record.running()) {
            throw new IOException(instance.reason());
        }
        requireInPlaceCheckpoints();
        context.checkpoint("checkpointing container " + record.containerId());
        Instant deadline = Instant.now().plus(settings.startTimeout());
        Files.createDirectories(image);
        AtomicFiles.write(record.files().checkpointing(), new byte[0]);
        instance.disconnect();
        long start;
        try {
            releaseAgent(record);
            start = checkpointPaused(record, image);
        } catch (IOException | RuntimeException e) {
            try {
                runOnAfterCheckpoint(record);
            } catch (IOException | RuntimeException running) {
                instance.paused(true);
                e.addSuppressed(running);
            }
            throw e;
        }
        Throwable failure = null;
        try {
            whileStopped.run();
        } catch (Throwable t) {
            failure = t;
        }
        // the container runs on all the same; what stopped the work is what the caller hears of
        boolean frozen = true;
        try {
            runsc.resume(record.files(), record.containerId());
            frozen = false;
        } catch (IOException | RuntimeException e) {
            // reported paused, and still marked: a resume through the API or the next adopt runs it on
            instance.paused(true);
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        long resumed = System.nanoTime();
        if (!frozen) {
            relisten(record);
            Files.deleteIfExists(record.files().checkpointing());
        }
        if (failure != null) {
            throw rethrown(failure);
        }
        instance.awaitAgent(deadline, context);
        return (resumed - start) / 1_000_000;
    }

    private static IOException rethrown(Throwable failure) {
        if (failure instanceof IOException e) {
            return e;
        } else if (failure instanceof RuntimeException e) {
            throw e;
        } else if (failure instanceof Error e) {
            throw e;
        }
        return new IOException(failure);
    }

    /** {@code runsc --version}'s first line, as {@link #availability} read it. */
    String runscVersion() {
        availability();
        return version;
    }

    /** Refuses a checkpoint of a running container where runsc would restart it instead of leaving it running. */
    private void requireInPlaceCheckpoints() {
        String version = runscVersion();
        if (!Runsc.checkpointsInPlace(version)) {
            throw ApiException.notImplemented("this runsc (" + version + ") cannot checkpoint a running container and "
                    + "leave it running (it restarts it); install runsc " + Runsc.IN_PLACE_SINCE + " or newer (Debian 13's "
                    + "package) or set runsc_path to one");
        }
    }

    /** {@code SIGUSR1}: the agent closes its listener and connections; waits until its socket's file is gone. */
    private void releaseAgent(ContainerRecord record) throws IOException {
        runsc.signal(record.files(), record.containerId(), "USR1");
        Instant until = Instant.now().plus(RELEASE_WAIT);
        // the supervisor removes the socket's file once it closed its listener, and tells the worker
        Path socket = record.files().agentDir().resolve(ContainerFiles.SOCKET_NAME);
        while (Files.exists(socket, LinkOption.NOFOLLOW_LINKS) && Instant.now().isBefore(until)) {
            pauseBeforeRetry();
        }
    }

    /**
     * Pauses the container and writes its checkpoint, leaving it paused; while runsc still finds a
     * host socket (the worker closing its connections a moment after the supervisor), resumes it
     * and tries again.
     *
     * @return when the container was frozen for the checkpoint: once {@code runsc pause} returned
     *         ({@link System#nanoTime()}; that command's own start-up, 20-70 ms, is not a pause)
     */
    private long checkpointPaused(ContainerRecord record, Path image) throws IOException {
        Instant until = Instant.now().plus(RELEASE_WAIT);
        while (true) {
            runsc.pause(record.files(), record.containerId());
            long start = System.nanoTime();
            try {
                runsc.checkpointLeavingRunning(record.files(), record.containerId(), image);
                return start;
            } catch (IOException e) {
                try {
                    runsc.resume(record.files(), record.containerId());
                } catch (IOException resuming) {
                    e.addSuppressed(resuming);
                    throw e;
                }
                boolean hostSocket = e.getMessage() != null && (e.getMessage().contains("host socket")
                        || e.getMessage().contains("connectionedEndpoint"));
                if (!hostSocket || Instant.now().isAfter(until)) {
                    throw new IOException("cannot checkpoint container " + record.containerId() + ": "
                            + e.getMessage(), e);
                }
            }
            pauseBeforeRetry();
        }
    }

    private static void pauseBeforeRetry() throws IOException {
        try {
            Thread.sleep(RELEASE_RETRY_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while checkpointing", e);
        }
    }

    /** Asks the agent to listen again ({@code SIGUSR2}): after a restore, or a checkpoint that failed. */
    private void relisten(ContainerRecord record) {
        try {
            runsc.signal(record.files(), record.containerId(), "USR2");
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot ask the agent of " + record.containerId()
                    + " to listen again: " + e.getMessage());
        }
    }

    /**
     * Replaces the container of {@code instance} (running, paused or dead) by one
     * restored from the checkpoint in {@code image} from the same bundle, running {@code whileGone}
     * once the old one is stopped; waits for the agent. The new container has a new id: runsc
     * deletes a checkpointed container slowly (1.1 s measured at load 15, against 0.6 s for the
     * restore), so the old one is deleted only once the new one runs.
     *
     * @return when the restored container started running ({@link System#nanoTime()})
     */
    long restoreFrom(GvisorInstance instance, Path image, WhileStopped whileGone, OperationContext context)
            throws IOException {
        ContainerRecord old = instance.record();
        RuntimeException leftovers = new RuntimeException();
        removeUnrecordedRestore(old.files(), old.containerId(), leftovers);
        if (leftovers.getSuppressed().length > 0) {
            throw new IOException("cannot remove the container an earlier restore left: "
                    + leftovers.getSuppressed()[0].getMessage(), leftovers.getSuppressed()[0]);
        }
        instance.disconnect();
        if (old.running()) {
            try {
                runsc.kill(old.files(), old.containerId());
            } catch (IOException e) {
                // exiting already: nothing left to kill
                LOG.log(System.Logger.Level.DEBUG, "runsc kill " + old.containerId() + ": " + e.getMessage());
            }
        }
        whileGone.run();
        Instant deadline = Instant.now().plus(settings.startTimeout());
        OciSpec.rebindAgentBinary(old.files().config(), agentBinary().getParent());
        String containerId = newContainerId(instance.id());
        // left in place if the restore fails, so that the next restore, adopt or destroy removes what it started
        AtomicFiles.write(old.files().restoring(), containerId.getBytes(StandardCharsets.UTF_8));
        ContainerRecord restored = restore(old.files(), containerId, image, deadline, context);
        long resumedAt = System.nanoTime();
        instance.restored(old.restoredAs(restored));
        Files.deleteIfExists(old.files().restoring());
        RuntimeException failures = new RuntimeException();
        remove(old.files(), old.containerId(), failures);
        for (Throwable t : failures.getSuppressed()) {
            LOG.log(System.Logger.Level.WARNING, "the container " + old.containerId() + " a restore replaced was not "
                    + "deleted: " + t.getMessage());
        }
        instance.awaitAgent(deadline, context);
        return resumedAt;
    }

    /** runsc's id of a new container of sandbox {@code id}: a nonce, so that its cgroups never meet another's. */
    private static String newContainerId(String id) {
        return "vivarium-" + id + "-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    }

    /** Starts container {@code containerId} of {@code files} (its bundle written) from the checkpoint in {@code image}. */
    private ContainerRecord restore(ContainerFiles files, String containerId, Path image, Instant deadline,
            OperationContext context) throws IOException {
        context.checkpoint("restoring container " + containerId);
        // the agent binds its socket anew once restored; a file left there would be in its way
        Files.deleteIfExists(files.agentDir().resolve(ContainerFiles.SOCKET_NAME));
        runsc.restoreDetached(files, containerId, image, Duration.between(Instant.now(), deadline).plusSeconds(1));
        ContainerRecord restored = running(files, containerId, "was restored");
        // the checkpoint was taken with the agent's listener closed
        runsc.signal(files, containerId, "USR2");
        return restored;
    }

    /** What runs while a container is frozen for its checkpoint, or gone for a restore. */
    @FunctionalInterface
    interface WhileStopped {
        void run() throws IOException;
    }

    /** Lets go of every container; they keep running for the next revision or daemon to adopt. */
    @Override
    public void close() {
        instances.values().forEach(GvisorInstance::close);
        instances.clear();
    }
}
