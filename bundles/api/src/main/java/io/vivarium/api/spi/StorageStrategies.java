package io.vivarium.api.spi;

import java.nio.file.Path;

import org.osgi.annotation.versioning.ProviderType;

/**
 * The storage strategies installed, as core hands them to an {@link Images} backend: the backend
 * says what it stores and where, and never names a strategy. Since 1.3.
 */
@ProviderType
public interface StorageStrategies {

    /**
     * The strategy to store {@code kind} in {@code dir} with: one that {@link StorageStrategy#supports
     * supports} it without falling back, and among those one that {@link StorageStrategy#chains
     * chains} it; else one that handles the kind at all (and says which mode it fell back to).
     * Throws {@link io.vivarium.api.ApiException} 503 naming the kind when none is installed.
     */
    StorageStrategy choose(ArtifactKind kind, Path dir);

    /**
     * The strategy that reads {@code artifact} back: one that handles its kind and writes its
     * {@link StoredArtifact#mode() mode}. Throws {@link io.vivarium.api.ApiException} 503 naming
     * the mode when none is installed (the strategy that wrote it was uninstalled).
     */
    StorageStrategy reader(StoredArtifact artifact);
}
