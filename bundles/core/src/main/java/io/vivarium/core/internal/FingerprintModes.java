package io.vivarium.core.internal;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.FingerprintMode;

/** The fingerprint modes registered right now, keyed by service id. */
final class FingerprintModes {
    private final Map<Long, FingerprintMode> byServiceId = new ConcurrentHashMap<>();

    void add(long serviceId, FingerprintMode mode) {
        byServiceId.put(serviceId, mode);
    }

    void remove(long serviceId) {
        byServiceId.remove(serviceId);
    }

    /** The preferred mode for a new listing; 503 naming the missing feature if there is none. */
    FingerprintMode best() {
        return byServiceId.values().stream().max(Comparator.comparingInt(FingerprintMode::preference))
                .orElseThrow(() -> new ApiException(503, "no fingerprint mode is installed: enable the fingerprints "
                        + "feature (bundles fingerprint-sha256 or fingerprint-stat)"));
    }

    List<String> names() {
        return byServiceId.values().stream().map(FingerprintMode::name).sorted().toList();
    }
}
