package io.vivarium.testkit;

import java.nio.file.Path;
import java.util.Set;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

/**
 * A strategy that only answers what it handles, which modes it writes, whether it works here and
 * whether it chains; it stores nothing. For tests of how strategies are chosen.
 */
public record InertStrategy(String name, Set<ArtifactKind> kinds, Set<String> modes, boolean works, boolean chains)
        implements StorageStrategy {

    /** A strategy for {@code kinds} writing no mode, that chains nothing. */
    public static InertStrategy of(String name, boolean works, ArtifactKind... kinds) {
        return new InertStrategy(name, Set.of(kinds), Set.of(), works, false);
    }

    @Override
    public boolean supports(ArtifactKind kind, Path dir) {
        return works && kinds.contains(kind);
    }

    @Override
    public boolean chains(ArtifactKind kind) {
        return chains;
    }

    @Override
    public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
            OperationContext context) {
        throw new UnsupportedOperationException(name + " stores nothing");
    }

    @Override
    public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) {
        throw new UnsupportedOperationException(name + " stores nothing");
    }

    @Override
    public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) {
        throw new UnsupportedOperationException(name + " stores nothing");
    }

    @Override
    public void verify(StoredArtifact stored) {
    }

    @Override
    public void delete(StoredArtifact stored) {
    }
}
