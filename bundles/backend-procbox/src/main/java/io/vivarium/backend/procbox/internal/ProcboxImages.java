package io.vivarium.backend.procbox.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Images of process sandboxes: the workspace only, never the memory of the sandbox's processes
 * (a child starts with the snapshot's files and fresh processes). Where workspaces are
 * loop-mounted images, the image file is stored while its filesystem is frozen ({@code fsfreeze}),
 * so it is consistent and the sandbox's writes wait only for that moment; a child gets its own
 * copy of the file (a reflink where the state directory's filesystem clones). Where they are
 * plain directories (a daemon that is not root), the tree is copied while the sandbox runs. A
 * child is started as a create is ({@link ProcboxLauncher}), on its own copy of the workspace.
 */
@Component(service = Images.class, property = SandboxBackend.NAME_PROPERTY + "=" + ProcboxBackend.NAME)
public final class ProcboxImages implements Images {

    static final String DESCRIPTION = "files only: a snapshot, branch or fork captures the workspace (/work), "
            + "not the memory or processes of the sandbox";

    private static final System.Logger LOG = System.getLogger(ProcboxImages.class.getName());
    /** Where a directory workspace goes in an image. */
    private static final String TREE = "work";

    private final ProcboxRuntime runtime;
    /** Whether workspaces are loop-mounted image files on this host. */
    private final boolean imageFiles;

    @Activate
    public ProcboxImages(@Reference ProcboxRuntime runtime) {
        this.runtime = runtime;
        this.imageFiles = runtime.probe().workspaces().supported();
    }

    @Override
    public String captures() {
        return Images.FILES;
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        ProcboxInstance procbox = runtime.instances().own(instance);
        Path file = procbox.dir().resolve(WorkspaceImages.IMAGE);
        try {
            if (!Files.isRegularFile(file)) {
                StoredArtifact tree = storage.choose(ArtifactKind.WORKSPACE, imageDir).store(ArtifactKind.WORKSPACE,
                        ProcboxInstance.workspaceDir(procbox.dir()), null, imageDir.resolve(TREE), context);
                return new CapturedImage(List.of(tree), 0, Images.FILES);
            }
            StorageStrategy strategy = storage.choose(ArtifactKind.WORKSPACE, imageDir);
            context.checkpoint("freezing the workspace of sandbox " + procbox.id());
            // a workspace mounted in the sandbox's namespace only is frozen and thawed through a mount
            // of it in the host's, in a scratch directory that the next start discards after a crash:
            // a thaw through the sandbox's root finds nothing once the sandbox has ended, and its
            // file system would stay frozen
            DryRunScratch scratch = procbox.sandbox().privateMounts() ? DryRunScratch.create(procbox.dir()) : null;
            try {
                Path workDir = scratch == null ? ProcboxInstance.workspaceDir(procbox.dir())
                        : SandboxMounts.mountWorkspace(procbox.sandbox().init(), file, scratch.lower());
                long start = System.nanoTime();
                HostTools.AS_DAEMON.run("fsfreeze", "--freeze", workDir.toString());
                StoredArtifact stored;
                try {
                    stored = strategy.store(ArtifactKind.WORKSPACE, file, null, imageDir.resolve(WorkspaceImages.IMAGE),
                            context);
                } finally {
                    thaw(workDir);
                }
                long pauseMillis = (System.nanoTime() - start) / 1_000_000;
                return new CapturedImage(List.of(stored), pauseMillis, Images.FILES);
            } finally {
                if (scratch != null) {
                    scratch.discard(HostTools.AS_DAEMON);
                }
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot capture the workspace of sandbox " + procbox.id() + ": "
                    + e.getMessage(), e);
        }
    }

    private static void thaw(Path workDir) {
        try {
            HostTools.AS_DAEMON.run("fsfreeze", "--unfreeze", workDir.toString());
        } catch (IOException e) {
            LOG.log(Level.ERROR, "cannot thaw the workspace " + workDir + "; its writes hang until "
                    + "`fsfreeze --unfreeze " + workDir + "`: " + e.getMessage());
        }
    }

    @Override
    public SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context) {
        try {
            Files.createDirectories(spec.dir());
            if (imageFiles) {
                Path target = spec.dir().resolve(WorkspaceImages.IMAGE);
                materialise(storage, imageDir.resolve(WorkspaceImages.IMAGE), target, context);
                context.checkpoint("starting sandbox " + spec.id());
                return start(spec, target);
            }
            materialise(storage, imageDir.resolve(TREE), ProcboxInstance.workspaceDir(spec.dir()), context);
            context.checkpoint("starting sandbox " + spec.id());
            return start(spec, null);
        } catch (IOException e) {
            throw ApiException.internal("cannot copy the workspace of snapshot " + imageDir + " for sandbox " + spec.id()
                    + ": " + e.getMessage(), e);
        }
    }

    /** @param copiedImage the child's workspace image, or null for a tree already copied into its workspace */
    private SandboxInstance start(InstanceSpec spec, Path copiedImage) {
        return runtime.instances().put(runtime.start(spec, copiedImage));
    }

    private static void materialise(StorageStrategies storage, Path stored, Path target, OperationContext context)
            throws IOException {
        storage.choose(ArtifactKind.WORKSPACE, target.getParent()).materialise(
                new StoredArtifact(ArtifactKind.WORKSPACE, stored, null, 0, null, null, 0), target, context);
    }

    /** The workspace this host's sandboxes need: an image file where workspaces are loop-mounted, else a tree. */
    @Override
    public String missingArtifact(Path imageDir) {
        Path needed = imageDir.resolve(imageFiles ? WorkspaceImages.IMAGE : TREE);
        if (imageFiles ? Files.isRegularFile(needed) : Files.isDirectory(needed)) {
            return null;
        }
        if (!imageFiles && Files.isRegularFile(imageDir.resolve(WorkspaceImages.IMAGE))) {
            return "the workspace image " + imageDir.resolve(WorkspaceImages.IMAGE) + " can only be mounted by a root "
                    + "daemon; this one keeps workspaces as directories";
        }
        return "the workspace " + (imageFiles ? "image " : "tree ") + needed + " is missing";
    }
}
