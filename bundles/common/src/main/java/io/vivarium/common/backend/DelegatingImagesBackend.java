package io.vivarium.common.backend;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StoredArtifact;

/**
 * {@link DelegatingBackend} for a backend with {@link Images}: core finds images with
 * {@code instanceof} on the registered service, so the component implements {@link Images} too and
 * forwards every method of it, {@link #compact} included, to the backend's images.
 */
public abstract class DelegatingImagesBackend extends DelegatingBackend implements Images {

    /** The backend's images (the backend itself when it implements {@link Images}). */
    protected abstract Images images();

    @Override
    public String captures() {
        return images().captures();
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        return images().capture(instance, imageDir, storage, context);
    }

    @Override
    public SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context) {
        return images().fork(spec, imageDir, storage, context);
    }

    @Override
    public CapturedImage compact(Path from, Path to, List<StoredArtifact> artifacts, StorageStrategies storage,
            OperationContext context) throws IOException {
        return images().compact(from, to, artifacts, storage, context);
    }

    @Override
    public String missingArtifact(Path imageDir) {
        return images().missingArtifact(imageDir);
    }
}
