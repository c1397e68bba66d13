package io.vivarium.api.spi;

import java.nio.file.Path;

/**
 * An artifact as a {@link StorageStrategy} stored or materialised it. Since 1.3.
 *
 * @param kind what it holds
 * @param path where it is on the host
 * @param mode how it was actually made, for operators and benchmarks: {@code reflink},
 *        {@code copy} (the honest fallback), {@code qcow2-overlay}, {@code qcow2-internal},
 *        {@code diff}, {@code flat}
 * @param bytesWritten bytes the host really wrote for it (0 for a reflink or an empty overlay)
 * @param contentHash a hash of the content it stands for, or null if the strategy keeps none
 * @param parent the artifact it depends on (a qcow2 backing file, a diff chain's parent), or null
 *        when it stands alone
 * @param depth links to the root: 0 when it stands alone
 */
public record StoredArtifact(ArtifactKind kind, Path path, String mode, long bytesWritten, String contentHash,
        StoredArtifact parent, int depth) {
}
