package io.vivarium.images.oci.internal;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * How this host pulls images ({@link OciImagesConfig}, read once).
 *
 * @param authFile the registries' credentials file, or null for none
 * @param insecureRegistries the registries ({@code host:port}) reached without verified TLS
 */
record OciImagesSettings(Path skopeo, Path umoci, Path authFile, Set<String> insecureRegistries, long maxFileBytes,
        long maxImageBytes, Duration pullTimeout) {

    private static final long BYTES_PER_MIB = 1 << 20;

    /** The framework property read when {@code insecure_registries} is empty (as the launcher's -D options set it). */
    static final String INSECURE_PROPERTY = "vivarium.images.insecure.registries";

    /** @param insecureProperty the framework property {@value #INSECURE_PROPERTY}, or null */
    static OciImagesSettings from(OciImagesConfig config, String insecureProperty) {
        String insecure = !config.insecure__registries().isBlank() || insecureProperty == null ? config.insecure__registries()
                : insecureProperty;
        return new OciImagesSettings(Path.of(config.skopeo__path()), Path.of(config.umoci__path()),
                config.auth__file().isBlank() ? null : Path.of(config.auth__file()),
                Arrays.stream(insecure.split(",")).map(String::strip).filter(s -> !s.isEmpty())
                        .collect(Collectors.toUnmodifiableSet()),
                config.max__file__mib() * BYTES_PER_MIB, config.max__image__mib() * BYTES_PER_MIB,
                Duration.ofMinutes(config.pull__timeout__mins()));
    }

    /** The defaults of {@link OciImagesConfig}, with the registries given reached without verified TLS. */
    static OciImagesSettings defaults(Set<String> insecureRegistries) {
        return new OciImagesSettings(Path.of("/usr/bin/skopeo"), Path.of("/usr/bin/umoci"), null, insecureRegistries,
                4096 * BYTES_PER_MIB, 16384 * BYTES_PER_MIB, Duration.ofMinutes(30));
    }
}
