package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.CheckpointDirectory;
import io.vivarium.common.files.FileClones;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * A container's checkpoints, each a directory {@code checkpoints/TAG} in the sandbox directory
 * (common's {@link CheckpointDirectory}: staged, renamed into place last, so a daemon killed
 * meanwhile leaves the whole checkpoint or none): the runsc checkpoint ({@value GvisorImage#MEMORY})
 * and a copy of the workspace taken while the container was paused ({@value GvisorImage#WORK}, a
 * reflink where the filesystem clones). A restore replaces the container by one restored from the
 * checkpoint on a fresh copy of its workspace: processes, /tmp and files are as they were; the
 * instance stays the same object ({@link GvisorInstance#restored}). Both go through the
 * {@link ContainerCheckpointer}.
 */
@Component(service = Checkpoints.class, property = SandboxBackend.NAME_PROPERTY + "=" + GvisorBackend.NAME)
public final class GvisorCheckpoints implements Checkpoints {

    private static final FileClones CLONES = new FileClones();

    private final GvisorRuntime runtime;

    @Activate
    public GvisorCheckpoints(@Reference GvisorRuntime runtime) {
        this.runtime = runtime;
    }

    /** The checkpoints of {@code instance}; a listing sizes each by its runsc checkpoint's files. */
    private static CheckpointDirectory checkpoints(GvisorInstance instance) {
        return new CheckpointDirectory(instance.record().files().checkpoints(), instance.id(),
                checkpoint -> CheckpointDirectory.filesIn(checkpoint.resolve(GvisorImage.MEMORY)));
    }

    @Override
    public CheckpointInfo create(SandboxInstance sandbox, String tag, OperationContext context) {
        GvisorInstance instance = runtime.instances().own(sandbox);
        Path workspace = instance.record().files().workspace();
        return checkpoints(instance).take(tag, staging -> {
            String[] mode = new String[1];
            runtime.checkpointer().checkpointAndResume(instance, staging.resolve(GvisorImage.MEMORY),
                    () -> mode[0] = CLONES.cloneOrCopy(workspace, staging.resolve(GvisorImage.WORK),
                            () -> HostCommand.timeFor(context.remaining())),
                    context);
            return new CheckpointDirectory.Saved("checkpoint+" + mode[0], Map.of("runsc", runtime.probe().runscVersion()));
        });
    }

    /** In place: the container is replaced by one restored from the checkpoint, the instance stays. */
    @Override
    public SandboxInstance restore(SandboxInstance sandbox, String tag, OperationContext context) {
        GvisorInstance instance = runtime.instances().own(sandbox);
        CheckpointDirectory checkpoints = checkpoints(instance);
        Path checkpoint = checkpoints.existing(tag);
        String takenWith = checkpoints.info(tag).path("runsc").asText("");
        String runsc = runtime.probe().runscVersion();
        if (!takenWith.equals(runsc)) {
            throw ApiException.conflict("checkpoint " + tag + " was taken with " + (takenWith.isEmpty() ? "an older runsc"
                    : takenWith) + " and runsc restores only its own checkpoints; this daemon runs "
                    + runsc + ": take it again");
        }
        ContainerFiles files = instance.record().files();
        try {
            runtime.checkpointer().restoreFrom(instance, checkpoint.resolve(GvisorImage.MEMORY),
                    () -> files.replaceWorkspace(workspace -> CLONES.cloneOrCopy(checkpoint.resolve(GvisorImage.WORK),
                            workspace, () -> HostCommand.timeFor(context.remaining()))), context);
        } catch (IOException e) {
            throw ApiException.internal("restoring sandbox " + instance.id() + " to " + tag + " failed, so the "
                    + "container may be stopped or in its state from before or from the checkpoint: " + e.getMessage(), e);
        }
        return instance;
    }

    @Override
    public boolean delete(SandboxInstance sandbox, String tag) {
        return checkpoints(runtime.instances().own(sandbox)).delete(tag);
    }

    @Override
    public List<CheckpointInfo> list(SandboxInstance sandbox) {
        return checkpoints(runtime.instances().own(sandbox)).list();
    }
}
