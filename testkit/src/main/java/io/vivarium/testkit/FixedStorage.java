package io.vivarium.testkit;

import java.nio.file.Path;
import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

/**
 * The storage strategies a test hands a backend directly, without core: the first strategy given
 * that handles a kind stores it, the first that writes an artifact's mode reads it back.
 */
public record FixedStorage(List<StorageStrategy> strategies) implements StorageStrategies {

    public static FixedStorage of(StorageStrategy... strategies) {
        return new FixedStorage(List.of(strategies));
    }

    @Override
    public StorageStrategy choose(ArtifactKind kind, Path dir) {
        return strategies.stream().filter(s -> s.kinds().contains(kind)).findFirst()
                .orElseThrow(() -> new ApiException(503, "the test installed no strategy for " + kind));
    }

    @Override
    public StorageStrategy reader(StoredArtifact artifact) {
        return strategies.stream()
                .filter(s -> s.kinds().contains(artifact.kind()) && s.modes().contains(artifact.mode()))
                .findFirst()
                .orElseThrow(() -> new ApiException(503, "the test installed no strategy that reads " + artifact.mode()));
    }
}
