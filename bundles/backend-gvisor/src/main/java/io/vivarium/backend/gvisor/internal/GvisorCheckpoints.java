package io.vivarium.backend.gvisor.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.files.FileClones;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * A container's checkpoints, each a directory {@code checkpoints/TAG} in the sandbox directory: the
 * runsc checkpoint ({@value GvisorImage#MEMORY}), a copy of the workspace taken while the
 * container was paused ({@value GvisorImage#WORK}, a reflink where the filesystem clones) and
 * {@value #INFO}. Staged as {@code .TAG.staging} and renamed into place last, so a daemon killed
 * meanwhile leaves the whole checkpoint or none. A restore replaces the container by one restored
 * from the checkpoint on a fresh copy of its workspace: processes, /tmp and files are as they were;
 * the instance stays the same object ({@link GvisorInstance#restored}). Both go through the
 * {@link ContainerCheckpointer}.
 */
@Component(service = Checkpoints.class, property = SandboxBackend.NAME_PROPERTY + "=" + GvisorBackend.NAME)
public final class GvisorCheckpoints implements Checkpoints {

    private static final String INFO = "checkpoint.json";
    private static final String STAGING_SUFFIX = ".staging";
    private static final FileClones CLONES = new FileClones();
    private static final ObjectMapper JSON = new ObjectMapper();

    private final GvisorRuntime runtime;

    @Activate
    public GvisorCheckpoints(@Reference GvisorRuntime runtime) {
        this.runtime = runtime;
    }

    private static Path dir(GvisorInstance instance) {
        return instance.record().files().checkpoints();
    }

    @Override
    public CheckpointInfo create(SandboxInstance sandbox, String tag, OperationContext context) {
        GvisorInstance instance = runtime.instances().own(sandbox);
        Path target = dir(instance).resolve(tag);
        if (Files.exists(target)) {
            throw ApiException.conflict("sandbox " + instance.id() + " already has a checkpoint " + tag + "; choose another tag");
        }
        Path staging = dir(instance).resolve("." + tag + STAGING_SUFFIX);
        Path workspace = instance.record().files().workspace();
        try {
            FileClones.deleteTree(staging);
            Files.createDirectories(staging);
            String[] mode = new String[1];
            runtime.checkpointer().checkpointAndResume(instance, staging.resolve(GvisorImage.MEMORY),
                    () -> mode[0] = CLONES.cloneOrCopy(workspace, staging.resolve(GvisorImage.WORK),
                            () -> HostCommand.timeFor(context.remaining())),
                    context);
            long created = Instant.now().getEpochSecond();
            AtomicFiles.write(staging.resolve(INFO), JSON.writeValueAsBytes(Map.of("created", created,
                    "mode", "checkpoint+" + mode[0], "runsc", runtime.probe().runscVersion())));
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            return info(target);
        } catch (IOException e) {
            deleteQuietly(staging);
            throw ApiException.internal("cannot checkpoint sandbox " + instance.id() + " as " + tag + ": "
                    + e.getMessage(), e);
        }
    }

    /** In place: the container is replaced by one restored from the checkpoint, the instance stays. */
    @Override
    public SandboxInstance restore(SandboxInstance sandbox, String tag, OperationContext context) {
        GvisorInstance instance = runtime.instances().own(sandbox);
        Path checkpoint = dir(instance).resolve(tag);
        if (!Files.isDirectory(checkpoint)) {
            throw ApiException.notFound("sandbox " + instance.id() + " has no checkpoint " + tag);
        }
        ContainerFiles files = instance.record().files();
        String takenWith;
        try {
            takenWith = JSON.readTree(checkpoint.resolve(INFO).toFile()).path("runsc").asText("");
        } catch (IOException e) {
            throw ApiException.conflict("checkpoint " + tag + " of sandbox " + instance.id() + " is unreadable: " + e.getMessage());
        }
        String runsc = runtime.probe().runscVersion();
        if (!takenWith.equals(runsc)) {
            throw ApiException.conflict("checkpoint " + tag + " was taken with " + (takenWith.isEmpty() ? "an older runsc"
                    : takenWith) + " and runsc restores only its own checkpoints; this daemon runs "
                    + runsc + ": take it again");
        }
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
        GvisorInstance instance = runtime.instances().own(sandbox);
        Path checkpoint = dir(instance).resolve(tag);
        if (!Files.isDirectory(checkpoint)) {
            return false;
        }
        try {
            FileClones.deleteTree(checkpoint);
        } catch (IOException e) {
            throw ApiException.internal("cannot delete checkpoint " + tag + " of sandbox " + instance.id() + ": "
                    + e.getMessage(), e);
        }
        return true;
    }

    @Override
    public List<CheckpointInfo> list(SandboxInstance sandbox) {
        GvisorInstance instance = runtime.instances().own(sandbox);
        Path dir = dir(instance);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<CheckpointInfo> all = new ArrayList<>();
        try (Stream<Path> dirs = Files.list(dir)) {
            for (Path d : dirs.filter(d -> !d.getFileName().toString().startsWith(".")).toList()) {
                all.add(info(d));
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot list the checkpoints of sandbox " + instance.id() + ": " + e.getMessage(), e);
        }
        all.sort(Comparator.comparingLong(CheckpointInfo::createdAtUnix).thenComparing(CheckpointInfo::tag));
        return all;
    }

    private static CheckpointInfo info(Path checkpoint) throws IOException {
        JsonNode info = JSON.readTree(checkpoint.resolve(INFO).toFile());
        long size = 0;
        for (Path file : GvisorImage.checkpointFiles(checkpoint.resolve(GvisorImage.MEMORY))) {
            size += Files.size(file);
        }
        return new CheckpointInfo(checkpoint.getFileName().toString(), info.path("created").asLong(), size,
                info.path("mode").asText());
    }

    private static void deleteQuietly(Path path) {
        try {
            FileClones.deleteTree(path);
        } catch (IOException e) {
            System.getLogger(GvisorCheckpoints.class.getName()).log(System.Logger.Level.WARNING,
                    "cannot delete " + path + ": " + e.getMessage());
        }
    }
}
