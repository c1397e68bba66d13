package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.common.net.SandboxNetworks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Sandboxes as gVisor containers, their lifecycle: created by the {@link GvisorLauncher},
 * adopted again from their record ({@link ContainerRecord}) and runsc's state after a daemon
 * restart or a bundle update, destroyed with everything they left. Snapshots and forks
 * ({@link GvisorImages}), checkpoints ({@link GvisorCheckpoints}) and pause ({@link GvisorPause})
 * are the seams beside it.
 */
// the seams, as static references without fields: DS registers the backend after them (on a stop it goes first)
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + GvisorBackend.NAME,
        reference = {
            @Reference(name = "images", service = Images.class, target = GvisorBackend.SEAM_TARGET),
            @Reference(name = "checkpoints", service = Checkpoints.class, target = GvisorBackend.SEAM_TARGET),
            @Reference(name = "pause", service = PauseControl.class, target = GvisorBackend.SEAM_TARGET)
        })
public final class GvisorBackend implements SandboxBackend {

    static final String NAME = "gvisor";
    /** The filter of this backend's seams. */
    static final String SEAM_TARGET = "(" + SandboxBackend.NAME_PROPERTY + "=" + NAME + ")";
    private static final System.Logger LOG = System.getLogger(GvisorBackend.class.getName());

    private final GvisorRuntime runtime;

    @Activate
    public GvisorBackend(@Reference GvisorRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public String name() {
        return NAME;
    }

    /**
     * Commands in a long-lived container, eval (the agent's warm interpreter, the root filesystem's
     * python3), a memory limit (the container's cgroup), volumes (binds) and a template's root image (the
     * container's root, its user the image's), network {@code egress} where the host can give it
     * (a root daemon with {@code ip} and {@code nft}, and a runsc from {@link Runsc#IN_PLACE_SINCE} on:
     * the one it was tried with, which knows {@code --net-disconnect-ok}); not the pids or disk limits.
     */
    @Override
    public Set<String> capabilities() {
        Set<String> always = Set.of(Capability.EXEC, Capability.EVAL, Capability.MEMORY_LIMIT, Capability.VOLUMES,
                Capability.ROOT_IMAGE);
        if (SandboxNetworks.unsupportedReason() != null || !Runsc.checkpointsInPlace(runtime.probe().runscVersion())) {
            return always;
        }
        Set<String> all = new java.util.HashSet<>(always);
        all.add(Capability.NETWORK_EGRESS);
        return Set.copyOf(all);
    }

    @Override
    public Map<String, String> details() {
        return runtime.probe().details();
    }

    /** Checked on every call, so installing runsc or building the root filesystem makes the backend available. */
    @Override
    public Availability availability() {
        return runtime.probe().availability();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, StorageStrategies storage, OperationContext context) {
        runtime.probe().requireAvailable();
        if (spec.pidsLimit() != null) {
            throw ApiException.notImplemented("pids_limit is not supported by gvisor yet: runsc 2022 applies a "
                    + "pids cgroup to the sandbox's host threads (the ptrace platform's stubs), and a guest that "
                    + "reaches it kills the whole sandbox; omit it");
        }
        if (spec.diskLimitMib() != null) {
            throw ApiException.notImplemented("disk_limit_mib is not supported by gvisor yet: the workspace is a host "
                    + "directory; omit it");
        }
        GvisorSettings settings = runtime.settings();
        GvisorLauncher.Start how = spec.root() == null
                ? new GvisorLauncher.Start(spec.memoryLimitMib(), settings.rootfs(), settings.uid(), settings.gid(), null, files -> { })
                : new GvisorLauncher.Start(spec.memoryLimitMib(), Optional.of(spec.root().rootfs()), settings.uidOf(spec),
                        settings.gidOf(spec), null, files -> { });
        return runtime.launcher().start(spec, how, context);
    }

    /**
     * Adopts a recorded container that runsc still runs (or keeps paused), with the same sandbox
     * process; reconnects to its agent. A cold one stays cold, whatever of it still ran ended.
     */
    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        ContainerRecord record;
        try {
            record = ContainerRecord.fromData(state.data());
        } catch (IllegalArgumentException e) {
            throw new InstanceGoneException(e.getMessage());
        }
        if (record.cold() != null) {
            GvisorHibernation.end(runtime, record);
            return runtime.instances().put(new GvisorInstance(spec.id(), record, true));
        }
        try {
            record = record.current();
        } catch (IOException e) {
            throw new InstanceGoneException(e.getMessage());
        }
        RuntimeException leftovers = new RuntimeException();
        runtime.launcher().removeUnrecordedRestore(record.files(), record.containerId(), leftovers);
        runtime.retired().removeAll(record.files(), record.containerId(), leftovers);
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
            Optional<Runsc.ContainerState> runscState = runtime.runsc().state(record.files(), record.containerId());
            if (runscState.filter(s -> s.running() || s.paused()).isEmpty()) {
                throw new InstanceGoneException("runsc says container " + record.containerId() + " is "
                        + runscState.map(Runsc.ContainerState::status).orElse("unknown to it"));
            }
            paused = runscState.get().paused();
            boolean ranOn = false;
            if (Files.exists(record.files().checkpointing()) && !(paused && ContainerCheckpointer.pauseKept(record))) {
                // a daemon killed during a checkpoint: the pause and the agent's deafness are its, not the caller's
                runtime.checkpointer().runOnAfterCheckpoint(record);
                paused = false;
                ranOn = true;
            }
            record.files().relink();
            GvisorInstance instance = new GvisorInstance(spec.id(), record, paused);
            if (ranOn) {
                Instant deadline = Instant.now().plus(runtime.settings().startTimeout());
                instance.awaitAgent(deadline, OperationContext.until(deadline));
            }
            return runtime.instances().put(instance);
        } catch (IOException e) {
            throw ApiException.internal("cannot adopt sandbox " + spec.id() + ": " + e.getMessage(), e);
        }
    }

    /** Kills and deletes the container (also one that already died) and removes its files. Idempotent. */
    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        runtime.instances().remove(spec.id());
        ContainerFiles files;
        String containerId;
        try {
            ContainerRecord record = currentOrRecorded(ContainerRecord.fromData(state.data()));
            files = record.files();
            containerId = record.containerId();
        } catch (IllegalArgumentException e) {
            // no recorded state: the daemon stopped before create returned
            files = ContainerFiles.of(spec.dir(), runtime.settings().linkDir(), spec.id());
            containerId = recordedContainerId(spec.dir()).orElse(null);
        }
        RuntimeException failure = new RuntimeException();
        // the replaced containers first: a cold one's, still being deleted in the background, is the recorded one
        runtime.retired().removeAll(files, containerId, failure);
        if (containerId != null) {
            runtime.launcher().remove(files, containerId, failure);
        }
        runtime.launcher().removeUnrecordedRestore(files, containerId, failure);
        if (SandboxNetworks.existingNamedNamespace(spec.id()).isPresent()) {
            // by what the host holds, not the spec: a create killed half-way may have made it
            runtime.launcher().removeNetwork(spec.id(), failure);
        }
        try {
            files.remove();
            Files.deleteIfExists(spec.dir().resolve(GvisorLauncher.CONTAINER_ID_FILE));
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
            return Optional.of(Files.readString(dir.resolve(GvisorLauncher.CONTAINER_ID_FILE)).strip());
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}
