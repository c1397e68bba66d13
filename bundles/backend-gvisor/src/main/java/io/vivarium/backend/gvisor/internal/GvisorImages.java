package io.vivarium.backend.gvisor.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.FileClones;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Images of gVisor containers ({@link GvisorImage}): a runsc checkpoint (the memory of every
 * process and the sandbox's kernel state, /tmp included) and the workspace tree, copied while the
 * container is paused for the checkpoint, which then runs on ({@link ContainerCheckpointer#checkpointAndResume});
 * a capture stores the artifacts through the storage strategies; a child is a new container
 * restored from the checkpoint ({@link GvisorLauncher}) with its own copy of the workspace (a
 * reflink where the filesystem clones). The root filesystem is read-only and shared.
 */
@Component(service = Images.class, property = SandboxBackend.NAME_PROPERTY + "=" + GvisorBackend.NAME)
public final class GvisorImages implements Images {

    private static final FileClones CLONES = new FileClones();

    private final GvisorRuntime runtime;

    @Activate
    public GvisorImages(@Reference GvisorRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public String captures() {
        return FILES_AND_MEMORY;
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        GvisorInstance container = runtime.instances().own(instance);
        ContainerFiles files = container.record().files();
        Path checkpoint = files.checkpoint();
        Path frozen = files.frozenWorkspace();
        try {
            FileClones.deleteTree(checkpoint);
            FileClones.deleteTree(frozen);
            GvisorImage image = new GvisorImage(rootfsOf(files), OciSpec.memoryLimitMib(files.config()),
                    runtime.probe().runscVersion());
            long pause = runtime.checkpointer().checkpointAndResume(container, checkpoint,
                    () -> CLONES.cloneOrCopy(files.workspace(), frozen, () -> HostCommand.timeFor(context.remaining())),
                    context);
            Path memoryDir = Files.createDirectories(imageDir.resolve(GvisorImage.MEMORY));
            List<StoredArtifact> artifacts = new ArrayList<>();
            for (Path file : GvisorImage.checkpointFiles(checkpoint)) {
                artifacts.add(storage.choose(ArtifactKind.MEMORY, imageDir).store(ArtifactKind.MEMORY, file, null,
                        memoryDir.resolve(file.getFileName()), context));
            }
            artifacts.add(storage.choose(ArtifactKind.WORKSPACE, imageDir).store(ArtifactKind.WORKSPACE, frozen,
                    null, imageDir.resolve(GvisorImage.WORK), context));
            image.write(imageDir);
            return new CapturedImage(artifacts, pause, FILES_AND_MEMORY);
        } catch (IOException e) {
            throw ApiException.internal("cannot capture sandbox " + container.id() + ": " + e.getMessage(), e);
        } finally {
            deleteQuietly(checkpoint);
            deleteQuietly(frozen);
        }
    }

    /** The root filesystem the container runs on, by its real path; empty for the host layout. */
    private static Optional<Path> rootfsOf(ContainerFiles files) throws IOException {
        Path root = OciSpec.root(files.config());
        return root.equals(files.skeleton()) ? Optional.empty() : Optional.of(root.toRealPath());
    }

    private static void deleteQuietly(Path path) {
        try {
            FileClones.deleteTree(path);
        } catch (IOException e) {
            System.getLogger(GvisorImages.class.getName()).log(System.Logger.Level.WARNING,
                    "cannot delete " + path + " after a capture: " + e.getMessage());
        }
    }

    /**
     * A new container restored from the snapshot's checkpoint: its processes go on where the
     * snapshot's were, on its own copy of the workspace; the memory limit is the snapshot's.
     */
    @Override
    public SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context) {
        GvisorImage image;
        try {
            image = GvisorImage.read(imageDir);
        } catch (IOException e) {
            throw ApiException.conflict("the gVisor snapshot in " + imageDir + " cannot be read: " + e.getMessage());
        }
        image.requireRunsc(runtime.probe().runscVersion());
        if (spec.memoryLimitMib() != null && !spec.memoryLimitMib().equals(image.memoryLimitMib())) {
            throw ApiException.badRequest("a child of this snapshot has its memory limit ("
                    + (image.memoryLimitMib() == null ? "none" : image.memoryLimitMib() + " MiB") + "); omit memory_limit_mib");
        }
        if (spec.pidsLimit() != null || spec.diskLimitMib() != null) {
            throw ApiException.notImplemented("pids_limit and disk_limit_mib are not supported by gvisor yet; omit them");
        }
        StoredArtifact work = new StoredArtifact(ArtifactKind.WORKSPACE, imageDir.resolve(GvisorImage.WORK), null, 0,
                null, null, 0);
        // a child of a template's sandbox runs as its image's user, as the sandbox it was branched from
        return runtime.launcher().start(spec, new GvisorLauncher.Start(image.memoryLimitMib(), image.rootfs(),
                runtime.settings().uidOf(spec), runtime.settings().gidOf(spec), imageDir.resolve(GvisorImage.MEMORY), files -> {
                    // the child's own workspace, made empty by start(), which removes it all if this fails:
                    // nothing live to keep, unlike a checkpoint restore's swap (ContainerFiles.replaceWorkspace)
                    FileClones.deleteTree(files.workspace());
                    storage.choose(ArtifactKind.WORKSPACE, files.dir()).materialise(work, files.workspace(), context);
                }), context);
    }

    /** The artifacts by the default, and the description naming the root filesystem and memory limit. */
    @Override
    public CapturedImage compact(Path from, Path to, List<StoredArtifact> artifacts, StorageStrategies storage,
            OperationContext context) throws IOException {
        Files.createDirectories(to.resolve(GvisorImage.MEMORY));
        CapturedImage flat = Images.super.compact(from, to, artifacts, storage, context);
        GvisorImage.read(from).write(to);
        return flat;
    }

    @Override
    public String missingArtifact(Path imageDir) {
        return GvisorImage.missing(imageDir);
    }
}
