package io.vivarium.storage.reflink.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

import org.osgi.service.component.annotations.Component;

/** Registers {@link ReflinkStrategy} as the storage strategy {@code reflink}. */
@Component(service = StorageStrategy.class, property = StorageStrategy.NAME_PROPERTY + "=" + ReflinkStrategy.NAME)
public class ReflinkStrategyComponent implements StorageStrategy {

    private final ReflinkStrategy strategy = new ReflinkStrategy();

    @Override
    public String name() {
        return strategy.name();
    }

    @Override
    public Set<ArtifactKind> kinds() {
        return strategy.kinds();
    }

    @Override
    public Set<String> modes() {
        return strategy.modes();
    }

    @Override
    public boolean supports(ArtifactKind kind, Path dir) {
        return strategy.supports(kind, dir);
    }

    @Override
    public StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target,
            OperationContext context) throws IOException {
        return strategy.store(kind, source, parent, target, context);
    }

    @Override
    public StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        return strategy.materialise(stored, target, context);
    }

    @Override
    public StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) throws IOException {
        return strategy.compact(stored, target, context);
    }

    @Override
    public void verify(StoredArtifact stored) throws IOException {
        strategy.verify(stored);
    }

    @Override
    public void delete(StoredArtifact stored) throws IOException {
        strategy.delete(stored);
    }
}
