package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.files.FileClones;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * The cold tier of a gVisor container (docs/tiers.md): {@link #save} writes a runsc checkpoint of
 * the paused container to {@code <dir>/cold} (written beside, fsynced, then renamed) and leaves it
 * paused; {@link #release} kills its sandbox process, which frees its memory, and deletes the
 * container; {@link #wake} restores a new container from the checkpoint on the same bundle and
 * workspace, which nothing touched meanwhile; the checkpoint goes once core recorded the wake
 * ({@link #discardSaved}). A cold container's record names the checkpoint
 * ({@link ContainerRecord#cold()}), and {@link GvisorBackend#adopt} of it ends whatever of the
 * container still runs (a daemon killed after the record but before the release, or during a wake).
 */
@Component(service = Hibernation.class, property = SandboxBackend.NAME_PROPERTY + "=" + GvisorBackend.NAME)
public final class GvisorHibernation implements Hibernation {
    private static final System.Logger LOG = System.getLogger(GvisorHibernation.class.getName());
    /** Beside a cold container's checkpoint: the version line of the runsc that wrote it. */
    static final String RUNSC_VERSION = "runsc-version";

    private final GvisorRuntime runtime;

    @Activate
    public GvisorHibernation(@Reference GvisorRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public InstanceState save(SandboxInstance instance, OperationContext context) {
        GvisorInstance container = runtime.instances().own(instance);
        if (container.status() != SandboxStatus.PAUSED) {
            throw ApiException.conflict("sandbox " + container.id() + " is " + container.status().wire() + ": only a "
                    + "paused container is saved cold (one that ran on would write its workspace past the state taken)");
        }
        ContainerFiles files = container.record().files();
        try {
            FileClones.deleteTree(files.coldPartial());
            runtime.checkpointer().checkpointLeavingPaused(container, files.coldPartial(), context);
            Files.writeString(files.coldPartial().resolve(RUNSC_VERSION), runtime.probe().runscVersion());
            for (Path file : GvisorImage.checkpointFiles(files.coldPartial())) {
                AtomicFiles.fsync(file);
            }
            // the checkpoint of an earlier cold spell, which the container woke from since
            FileClones.deleteTree(files.cold());
            Files.move(files.coldPartial(), files.cold(), StandardCopyOption.ATOMIC_MOVE);
            AtomicFiles.fsyncDirectory(files.dir());
        } catch (IOException | RuntimeException e) {
            try {
                FileClones.deleteTree(files.coldPartial());
            } catch (IOException left) {
                e.addSuppressed(left);
            }
            if (e instanceof ApiException api) {
                throw api;
            }
            throw ApiException.internal("cannot save the state of sandbox " + container.id() + ": " + e.getMessage(), e);
        }
        ContainerRecord cold = container.record().coldIn(files.cold());
        return new InstanceState(cold.sandboxPid(), cold.toData());
    }

    @Override
    public SandboxInstance release(SandboxInstance instance, InstanceState saved) {
        GvisorInstance container = runtime.instances().own(instance);
        ContainerRecord running = container.record();
        ContainerRecord cold = ContainerRecord.fromData(saved.data());
        // cold from here on, never dead: core shows this instance until the release returned
        container.restored(cold);
        try {
            end(runtime, cold);
        } catch (RuntimeException e) {
            container.restored(running);
            throw e;
        }
        return container;
    }

    /**
     * Ends whatever of a container saved cold still runs: the container itself, killed before it
     * could run on past its checkpoint, and one a wake restored that core never recorded; what
     * its checkpoint marked goes too. The checkpoint stays. Their sandbox processes, which hold
     * their memory, are gone when this returns, or it throws; the containers are deleted in the
     * background ({@code runsc delete} takes 1.5 s here, which a wake must not wait for), retired
     * first, so that the next adopt or the destroy finishes whatever of that cleanup fails.
     */
    static void end(GvisorRuntime runtime, ContainerRecord cold) {
        ContainerFiles files = cold.files();
        RuntimeException leftovers = new RuntimeException();
        List<ContainerRecord> ended = new ArrayList<>();
        ContainerRecord woken = cold;
        try {
            woken = cold.current();
        } catch (IOException e) {
            leftovers.addSuppressed(e);
        }
        for (ContainerRecord record : woken.containerId().equals(cold.containerId()) ? List.of(cold) : List.of(cold, woken)) {
            boolean marked = retired(runtime, record, leftovers);
            // killed even if unmarked: its memory must go, and so must any chance of it running past the checkpoint
            if (runtime.launcher().killSandboxProcess(record, leftovers) && marked) {
                ended.add(record);
            }
        }
        runtime.launcher().removeUnrecordedRestore(files, cold.containerId(), leftovers);
        try {
            Files.deleteIfExists(files.checkpointing());
            if (!cold.running() && !woken.running()) {
                Files.deleteIfExists(files.sandboxProcess());
            }
        } catch (IOException e) {
            leftovers.addSuppressed(e);
        }
        if (cold.running() || woken.running()) {
            Throwable first = leftovers.getSuppressed().length > 0 ? leftovers.getSuppressed()[0] : null;
            throw ApiException.internal("the sandbox process of cold sandbox " + files.dir().getFileName()
                    + " still runs: " + (first == null ? "it outlived a SIGKILL" : first.getMessage()), first);
        }
        for (Throwable t : leftovers.getSuppressed()) {
            LOG.log(System.Logger.Level.WARNING, "cold sandbox " + files.dir().getFileName() + ": " + t.getMessage()
                    + " (the next adopt or the destroy tries again)");
        }
        ended.forEach(record -> runtime.retired().deleteLater(files, record.containerId()));
    }

    /** Marks the container of {@code record} retired, so that the next adopt or the destroy deletes it if this daemon does not. */
    private static boolean retired(GvisorRuntime runtime, ContainerRecord record, Exception failures) {
        try {
            runtime.retired().mark(record.files(), record.containerId());
            return true;
        } catch (IOException e) {
            failures.addSuppressed(e);
            return false;
        }
    }

    @Override
    public SandboxInstance wake(SandboxInstance instance, OperationContext context) {
        GvisorInstance container = runtime.instances().own(instance);
        if (container.record().cold() == null) {
            return container;
        }
        requireSameRunsc(container);
        try {
            runtime.checkpointer().wake(container, context);
        } catch (IOException | RuntimeException e) {
            throw ApiException.internal("runsc could not restore container " + container.record().containerId()
                    + " from " + container.record().cold() + ": " + e.getMessage(), e);
        }
        container.paused(false);
        return container;
    }

    /** Deletes the checkpoint the container was woken from: core recorded it running, no adoption reads it again. */
    @Override
    public void discardSaved(SandboxInstance woken) {
        GvisorInstance container = runtime.instances().own(woken);
        try {
            FileClones.deleteTree(container.record().files().cold());
        } catch (IOException e) {
            throw ApiException.internal("cannot delete the saved state of sandbox " + container.id() + ": " + e.getMessage(), e);
        }
    }

    /** runsc restores only its own checkpoints: one saved by another runsc can never be woken, and says so. */
    private void requireSameRunsc(GvisorInstance container) {
        String savedWith;
        try {
            savedWith = Files.readString(container.record().cold().resolve(RUNSC_VERSION)).strip();
        } catch (IOException e) {
            savedWith = "an unknown runsc";
        }
        String now = runtime.probe().runscVersion();
        if (!savedWith.equals(now)) {
            throw ApiException.conflict("it was saved by " + savedWith + " and this daemon runs " + now
                    + ", which restores only its own checkpoints: it cannot be woken; delete it");
        }
    }

    @Override
    public boolean cold(SandboxInstance instance) {
        return runtime.instances().own(instance).record().cold() != null;
    }
}
