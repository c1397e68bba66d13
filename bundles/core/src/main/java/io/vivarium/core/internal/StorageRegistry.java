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
            throw new ApiException(503, "no storage strategy for " + kind.name().toLowerCase(Locale.ROOT)
                    + " artifacts is installed: enable the storage-reflink feature (POST /v1/features/storage-reflink/enable)");
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
        throw new ApiException(503, "no installed storage strategy reads " + artifact.kind().name().toLowerCase(Locale.ROOT)
                + " artifacts stored as '" + artifact.mode() + "' (" + artifact.path().getFileName()
                + "): enable the feature whose storage bundle wrote it");
    }
}
