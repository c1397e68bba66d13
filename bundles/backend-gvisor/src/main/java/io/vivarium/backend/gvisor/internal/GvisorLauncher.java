package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.common.net.SavedPolicy;
import io.vivarium.common.process.ProcessStarts;
import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.kit.backend.InstanceTable;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How a container is started and taken away: its OCI bundle written ({@link ContainerFiles},
 * {@link OciSpec}) and run by runsc, fresh (a create) or from a checkpoint (a fork, a restore),
 * with our agent as process 1, reached on its socket in a host directory bound into the container,
 * which runsc's gofer creates on the host ({@code --host-uds=create}); and removed with its
 * cgroups. A sandbox of network {@code egress} gets a named network namespace joined to the host
 * ({@link SandboxNetworks}), which its containers join and which outlives them (a restore in place
 * or a wake from cold finds it again), until the sandbox's destroy. A start that fails undoes what
 * it made.
 */
final class GvisorLauncher {

    /** Where a create records its container id before runsc runs, for a destroy after a daemon died mid-create. */
    static final String CONTAINER_ID_FILE = "container-id";
    private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");
    private static final Duration KILL_WAIT = Duration.ofSeconds(10);
    private static final long KILL_POLL_MILLIS = 10;
    private static final System.Logger LOG = System.getLogger(GvisorLauncher.class.getName());

    private final GvisorSettings settings;
    private final Runsc runsc;
    private final InstanceTable<GvisorInstance> instances;
    private final SandboxNetworks networks;
    private volatile Path agentBinary;

    GvisorLauncher(GvisorSettings settings, Runsc runsc, InstanceTable<GvisorInstance> instances, SandboxNetworks networks) {
        this.settings = settings;
        this.runsc = runsc;
        this.instances = instances;
        this.networks = networks;
    }

    /**
     * How a container starts: fresh ({@code checkpoint} null), or restored from a checkpoint whose
     * root filesystem, memory limit and workspace ({@code prepare} fills it) it must have.
     *
     * @param rootfs the root filesystem, or empty for the host's /usr layout
     * @param uid the uid its processes run as (the agent drops to it) and its workspace is owned by
     * @param gid their gid
     */
    record Start(Integer memoryLimitMib, Optional<Path> rootfs, int uid, int gid, Path checkpoint, Prepare prepare) {
    }

    /** Fills a new container's workspace before it starts. */
    @FunctionalInterface
    interface Prepare {
        void workspace(ContainerFiles files) throws IOException;
    }

    /**
     * Writes the bundle, starts (or restores) the container, waits for its agent and records the
     * instance in the table; undoes it all on failure.
     */
    GvisorInstance start(InstanceSpec spec, Start how, OperationContext context) {
        ContainerFiles files = ContainerFiles.of(spec.dir(), settings.linkDir(), spec.id());
        String containerId = newContainerId(spec.id());
        Instant deadline = Instant.now().plus(settings.startTimeout());
        GvisorInstance instance = null;
        boolean started = false;
        try {
            files.prepare(how.uid(), how.gid());
            how.prepare().workspace(files);
            AtomicFiles.write(spec.dir().resolve(CONTAINER_ID_FILE), containerId.getBytes(StandardCharsets.UTF_8));
            Path root = how.rootfs().orElse(files.skeleton());
            if (how.rootfs().isEmpty()) {
                OciSpec.writeSkeleton(files.skeleton());
            }
            OciSpec.Network network = null;
            if (spec.network().egress()) {
                SandboxNetworks.Namespace ns = SandboxNetworks.namedNamespace(spec.id());
                networks.attach(spec.id(), ns, spec.network(), spec.resolver());
                network = new OciSpec.Network(ns.path(), networks.resolvConf(),
                        new SavedPolicy(spec.network(), spec.resolver()));
            }
            AtomicFiles.write(files.config(), OciSpec.bytes(OciSpec.of(spec.id(), root, how.rootfs().isEmpty(),
                    agentBinary().getParent(), files, how.uid(), how.gid(), how.memoryLimitMib(), spec.volumes(), network)));
            context.checkpoint("starting the container");
            started = true;
            ContainerRecord record;
            if (how.checkpoint() == null) {
                runsc.runDetached(files, containerId, Duration.between(Instant.now(), deadline).plusSeconds(1));
                record = running(files, containerId, "started");
            } else {
                record = restore(files, containerId, how.checkpoint(), deadline, context);
            }
            instance = new GvisorInstance(spec.id(), record, false);
            instance.awaitAgent(deadline, context);
            return instances.put(instance);
        } catch (IOException | RuntimeException e) {
            if (instance != null) {
                instance.close();
            }
            if (started) {
                remove(files, containerId, e);
            }
            if (spec.network().egress()) {
                removeNetwork(spec.id(), e);
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
        // its user is whom its workspace was made for (prepare): the backend's, or a template image's
        return new ContainerRecord(containerId, pid, startTime, files, (int) Files.getAttribute(files.workspace(), "unix:uid"),
                (int) Files.getAttribute(files.workspace(), "unix:gid"));
    }

    /** Starts container {@code containerId} of {@code files} (its bundle written) from the checkpoint in {@code image}. */
    ContainerRecord restore(ContainerFiles files, String containerId, Path image, Instant deadline,
            OperationContext context) throws IOException {
        context.checkpoint("restoring container " + containerId);
        // the agent binds its socket anew once restored; a file left there would be in its way
        Files.deleteIfExists(files.agentDir().resolve(ContainerFiles.SOCKET_NAME));
        Optional<Path> netns = OciSpec.networkNamespace(files.config());
        Optional<SandboxNetworks.Link> link = netns.isPresent() ? SandboxNetworks.link(files.sandboxId()) : Optional.empty();
        if (netns.isPresent() && (link.isEmpty() || !Files.exists(netns.get()))) {
            // the host rebooted while it slept: its namespace, pair and rules are gone; made again as at its
            // create. A namespace deleted otherwise leaves its pair to the kernel's asynchronous clean-up for a
            // while, and its chain: both are removed first.
            networks.detach(files.sandboxId());
            SavedPolicy kept = OciSpec.savedPolicy(files.config()).orElseThrow(() -> new IOException("sandbox "
                    + files.sandboxId() + " has no network on the host, and its spec (written before specs kept their "
                    + "policy) cannot say which to make"));
            networks.attach(files.sandboxId(), SandboxNetworks.namedNamespace(files.sandboxId()), kept.policy(),
                    kept.resolver());
        } else if (netns.isPresent()) {
            // the container before took eth0's address into its network stack; the restored one reads it from eth0
            SandboxNetworks.readdress(link.get(), new SandboxNetworks.Namespace(netns.get().getFileName().toString(),
                    netns.get()));
        }
        runsc.restoreDetached(files, containerId, image, Duration.between(Instant.now(), deadline).plusSeconds(1));
        ContainerRecord restored = running(files, containerId, "was restored");
        // the checkpoint was taken with the agent's listener closed
        runsc.signal(files, containerId, "USR2");
        return restored;
    }

    /** The agent binary, written to the agent directory once per revision; containers bind its directory read-only. */
    Path agentBinary() throws IOException {
        Path binary = agentBinary;
        if (binary == null) {
            binary = AgentBinary.install(settings.agentDir());
            agentBinary = binary;
        }
        return binary;
    }

    /** runsc's id of a new container of sandbox {@code id}: a nonce, so that its cgroups never meet another's. */
    static String newContainerId(String id) {
        return "vivarium-" + id + "-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    }

    /**
     * Removes the container {@link ContainerFiles#restoring()} names unless it is {@code current}:
     * one a restore started and a daemon killed meanwhile, or a restore that failed, did not
     * record. The file goes once that container is gone. What fails is added to {@code failures}.
     */
    void removeUnrecordedRestore(ContainerFiles files, String current, Exception failures) {
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
     * Kills the sandbox process of {@code record} outright (SIGKILL from the host, where a paused
     * container's processes cannot run another instruction; {@link #remove} would resume it first)
     * and waits until it is gone; the container is left for {@link #remove}. False, with what
     * failed added to {@code failures}, if it is not gone.
     */
    boolean killSandboxProcess(ContainerRecord record, Exception failures) {
        if (record.running()) {
            ProcessHandle.of(record.sandboxPid()).ifPresent(ProcessHandle::destroyForcibly);
            Instant until = Instant.now().plus(KILL_WAIT);
            while (record.running()) {
                if (Instant.now().isAfter(until)) {
                    failures.addSuppressed(new IOException("the sandbox process " + record.sandboxPid() + " of container "
                            + record.containerId() + " outlived a SIGKILL by " + KILL_WAIT.toSeconds() + " s"));
                    return false;
                }
                try {
                    Thread.sleep(KILL_POLL_MILLIS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    failures.addSuppressed(e);
                    return false;
                }
            }
        }
        return true;
    }

    /** Removes the network of sandbox {@code sandboxId}: its rules, its host interface and its namespace; what fails is added to {@code failures}. */
    void removeNetwork(String sandboxId, Exception failures) {
        networks.detach(sandboxId);
        try {
            SandboxNetworks.removeNamedNamespace(sandboxId);
        } catch (IOException e) {
            failures.addSuppressed(e);
        }
    }

    /**
     * {@code runsc kill} then {@code runsc delete --force}, the container running, paused or not; a
     * container runsc does not know (never started, or deleted already) is fine. Then its cgroups,
     * which a start that failed half-way leaves behind. What fails is added to {@code failures}.
     */
    void remove(ContainerFiles files, String containerId, Exception failures) {
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
                // its sandbox process is gone (killed while paused): runsc still says paused, and delete removes it
                LOG.log(System.Logger.Level.DEBUG, "runsc resume " + containerId + ": " + e.getMessage());
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
}
