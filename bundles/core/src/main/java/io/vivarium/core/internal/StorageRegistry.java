package io.vivarium.core.internal;

import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

/** The storage strategies registered, by service id (oldest first); chosen by what they support and, to read an artifact back, by its mode; never by name. */
final class StorageRegistry implements StorageStrategies {
    private final Map<Long, StorageStrategy> byServiceId = new ConcurrentSkipListMap<>();

    void add(long serviceId, StorageStrategy strategy) {
        byServiceId.put(serviceId, strategy);
    }

    void remove(long serviceId) {
        byServiceId.remove(serviceId);
    }

    /** Whether a strategy for {@code kind} is installed. */
    boolean handles(ArtifactKind kind) {
        return byServiceId.values().stream().anyMatch(s -> s.kinds().contains(kind));
    }

    /** {@code kind} as messages name it: {@code disk}, {@code memory}, {@code workspace}. */
    static String name(ArtifactKind kind) {
        return kind.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public StorageStrategy choose(ArtifactKind kind, Path dir) {
        StorageStrategy working = null;
        StorageStrategy fallback = null;
        for (StorageStrategy s : byServiceId.values()) {
            if (!s.kinds().contains(kind)) {
                continue;
            }
            if (s.supports(kind, dir)) {
                if (s.chains(kind)) {
                    return s;
                }
                working = working == null ? s : working;
            }
            fallback = fallback == null ? s : fallback;
        }
        if (fallback == null) {
            throw new ApiException(503, "no storage strategy for " + name(kind) + " artifacts is installed: enable a "
                    + "feature that brings one (GET /v1/features lists them)");
        }
        return working != null ? working : fallback;
    }

    @Override
    public StorageStrategy reader(StoredArtifact artifact) {
        for (StorageStrategy s : byServiceId.values()) {
            if (s.kinds().contains(artifact.kind()) && s.modes().contains(artifact.mode())) {
                return s;
            }
        }
        throw new ApiException(503, "no installed storage strategy reads " + name(artifact.kind()) + " artifacts stored as '" + artifact.mode() + "' (" + artifact.path().getFileName()
                + "): enable the feature whose storage bundle wrote it");
    }
}
