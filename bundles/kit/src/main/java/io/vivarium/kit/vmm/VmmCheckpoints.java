package io.vivarium.kit.vmm;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.CheckpointDirectory;
import io.vivarium.common.files.FileClones;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;

/**
 * A VMM backend's checkpoints, for a driver that is also {@link VmmSnapshots}: each a directory
 * {@code checkpoints/TAG} in the sandbox's directory (common's {@link CheckpointDirectory}: staged,
 * renamed into place last, so a daemon killed meanwhile leaves the whole checkpoint or none) with
 * the state the VMM saved of the paused guest (whole, or only what changed since the checkpoint
 * this VMM process last took or was restored from, written onto a copy of it) and a copy of the
 * workspace disk taken in the same pause (a reflink where the filesystem clones); its mode says
 * both ({@code diff+reflink}). A restore relaunches: the VMM is ended, the disk replaced by a fresh
 * copy of the checkpoint's, and a new VMM loads the state, which the kit's adoption finds through
 * the pid file even from the state before the restore. A VMM loads only what its own version saved,
 * so a checkpoint taken under another version is refused. The backend bundle registers a component
 * that extends it as the backend's {@link Checkpoints}.
 *
 * @since 1.1
 */
public abstract class VmmCheckpoints implements Checkpoints {

    private static final String DIR = "checkpoints";
    private static final FileClones CLONES = new FileClones();

    private final VmmRuntime runtime;

    /** @throws IllegalArgumentException if the runtime's driver is not {@link VmmSnapshots} */
    protected VmmCheckpoints(VmmRuntime runtime) {
        if (runtime.launcher().snapshots().isEmpty()) {
            throw new IllegalArgumentException("the VMM driver saves no guest state (it is no VmmSnapshots)");
        }
        this.runtime = runtime;
    }

    /** The checkpoints of {@code instance}; a listing sizes each by the files in it (state, memory, disk). */
    private static CheckpointDirectory checkpoints(VmmInstance instance) {
        return new CheckpointDirectory(instance.spec().dir().resolve(DIR), instance.id(), CheckpointDirectory::filesIn);
    }

    @Override
    public CheckpointInfo create(SandboxInstance sandbox, String tag, OperationContext context) {
        VmmInstance instance = runtime.instances().own(sandbox);
        if (!instance.alive()) {
            throw ApiException.conflict("sandbox " + instance.id() + " is " + instance.status().name().toLowerCase()
                    + " (" + instance.reason() + "): start it before taking a checkpoint");
        }
        CheckpointDirectory checkpoints = checkpoints(instance);
        CheckpointInfo info = checkpoints.take(tag, staging -> {
            String[] disk = new String[1];
            context.checkpoint("saving the state of sandbox " + instance.id());
            String kind = runtime.launcher().save(instance, staging, () -> disk[0] = CLONES.cloneOrCopy(
                    instance.spec().dir().resolve(VmmLauncher.WORKSPACE), staging.resolve(VmmLauncher.WORKSPACE),
                    () -> HostCommand.timeFor(context.remaining())));
            return new CheckpointDirectory.Saved(kind + "+" + disk[0], Map.of("vmm", vmmVersion()));
        });
        instance.base(checkpoints.existing(tag));
        return info;
    }

    /** By relaunch: the VMM before ends, a new one loads the checkpoint's state onto a copy of its disk. */
    @Override
    public SandboxInstance restore(SandboxInstance sandbox, String tag, OperationContext context) {
        VmmInstance instance = runtime.instances().own(sandbox);
        CheckpointDirectory checkpoints = checkpoints(instance);
        Path checkpoint = checkpoints.existing(tag);
        String takenWith = checkpoints.info(tag).path("vmm").asText("");
        String now = vmmVersion();
        if (!takenWith.equals(now)) {
            throw ApiException.conflict("checkpoint " + tag + " was taken with " + (takenWith.isEmpty() ? "an unknown version"
                    : takenWith) + " and a VMM loads only the state its own version saved; this daemon runs " + now
                    + ": take it again");
        }
        InstanceSpec spec = instance.spec();
        Path disk = spec.dir().resolve(VmmLauncher.WORKSPACE);
        Path fresh = spec.dir().resolve(VmmLauncher.WORKSPACE + ".restoring");
        try {
            // the copy first, while the guest runs on: a copy that fails (a full disk) leaves it as it was
            context.checkpoint("copying the disk of checkpoint " + tag + " of sandbox " + spec.id());
            Files.deleteIfExists(fresh);
            CLONES.cloneOrCopy(checkpoint.resolve(VmmLauncher.WORKSPACE), fresh, () -> HostCommand.timeFor(context.remaining()));
        } catch (IOException e) {
            try {
                Files.deleteIfExists(fresh);
            } catch (IOException left) {
                e.addSuppressed(left); // the next restore removes it first
            }
            throw ApiException.internal("cannot restore sandbox " + spec.id() + " to checkpoint " + tag + ", which runs on "
                    + "as it was: the copy of the checkpoint's disk failed: " + e.getMessage(), e);
        }
        instance.close();
        runtime.launcher().end(spec, instance.state());
        try {
            Files.move(fresh, disk, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return runtime.instances().put(runtime.launcher().load(spec, checkpoint, context));
        } catch (IOException | ApiException e) {
            throw new ApiException(500, "restoring sandbox " + spec.id() + " to checkpoint " + tag + " failed after its "
                    + "VMM was ended, so it has none now (restore again, or delete it): " + e.getMessage());
        }
    }

    @Override
    public boolean delete(SandboxInstance sandbox, String tag) {
        return checkpoints(runtime.instances().own(sandbox)).delete(tag);
    }

    @Override
    public List<CheckpointInfo> list(SandboxInstance sandbox) {
        return checkpoints(runtime.instances().own(sandbox)).list();
    }

    /** The first line the VMM's executable prints for {@code --version}, or what says it could not be asked. */
    private String vmmVersion() {
        return runtime.details().getOrDefault("version", "an unknown version");
    }
}
