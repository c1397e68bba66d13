package com.example.vivarium.echo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

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

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Images of example-local sandboxes: the workspace only, one artifact ({@value #TREE}/ in the image
 * directory), never the memory of the sandbox's processes (a child starts with the image's files
 * and a fresh agent). The storage strategy core chooses does every copy (a reflink where the
 * filesystem clones, a full copy otherwise): the tree is stored while the sandbox runs, with
 * nothing frozen, so a file written during the capture may be caught half-written. A child is
 * started as a create is ({@link LocalLauncher}), on its own copy of the workspace. The default
 * {@link Images#compact} fits: the image directory holds that one artifact and nothing else.
 */
@Component(service = Images.class, property = SandboxBackend.NAME_PROPERTY + "=" + LocalBackend.NAME)
public final class LocalImages implements Images {

    static final String DESCRIPTION = "files only: a snapshot, branch or fork copies the workspace while the sandbox "
            + "runs, not the memory or processes of the sandbox";

    /** Where the workspace goes in an image. */
    private static final String TREE = "work";

    private final LocalRuntime runtime;

    @Activate
    public LocalImages(@Reference LocalRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public String captures() {
        return Images.FILES;
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        LocalInstance local = runtime.instances().own(instance);
        context.checkpoint("copying the workspace of sandbox " + local.id());
        try {
            StoredArtifact tree = storage.choose(ArtifactKind.WORKSPACE, imageDir).store(ArtifactKind.WORKSPACE,
                    local.work(), null, imageDir.resolve(TREE), context);
            return new CapturedImage(List.of(tree), 0, Images.FILES);
        } catch (IOException e) {
            throw ApiException.internal("cannot capture the workspace of sandbox " + local.id() + ": " + e.getMessage(), e);
        }
    }

    /** Core has checked {@link #missingArtifact} already; a failure leaves the child's directory as it was given. */
    @Override
    public SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context) {
        Path work = LocalLauncher.work(spec.dir());
        try {
            context.checkpoint("copying the workspace of " + imageDir + " for sandbox " + spec.id());
            storage.choose(ArtifactKind.WORKSPACE, spec.dir()).materialise(
                    new StoredArtifact(ArtifactKind.WORKSPACE, imageDir.resolve(TREE), null, 0, null, null, 0), work,
                    context);
            return runtime.instances().put(runtime.launcher().start(spec, context));
        } catch (IOException e) {
            deleteTree(work);
            throw ApiException.internal("cannot copy the workspace of " + imageDir + " for sandbox " + spec.id() + ": "
                    + e.getMessage(), e);
        } catch (RuntimeException e) {
            deleteTree(work);
            throw e;
        }
    }

    @Override
    public String missingArtifact(Path imageDir) {
        Path tree = imageDir.resolve(TREE);
        return Files.isDirectory(tree) ? null : "the workspace tree " + tree + " is missing";
    }

    private static void deleteTree(Path dir) {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | UncheckedIOException e) {
            // core removes the child's directory after a failed fork all the same
        }
    }
}
