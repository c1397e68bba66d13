package io.vivarium.api.spi;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * How disks, workspaces and memory images are stored, copied and restored on the host. Register
 * one OSGi service per strategy with the service property {@value #NAME_PROPERTY}:
 * {@code storage-reflink} (copy-on-write clones where the filesystem has them, a full copy
 * otherwise), {@code storage-qcow2} (backing-file overlays and internal snapshots of VM disks),
 * {@code storage-diffchain} (memory images as chains of page diffs with parent hashes). Backends
 * choose a strategy per artifact through {@link #supports}; core never names one. Every result
 * says the mode actually used, which may be a fallback (a reflink strategy on ext4 copies).
 *
 * <p>Every method that makes an artifact stages it beside {@code target} and renames it into
 * place last, so a {@code kill -9} leaves the whole artifact or none. Calls for different targets
 * may run concurrently. Since 1.3.
 */
@ConsumerType
public interface StorageStrategy {

    /** Service property naming the strategy, e.g. {@code vivarium.storage=reflink}. */
    String NAME_PROPERTY = "vivarium.storage";

    String name();

    /** The kinds of artifact this strategy handles at all. */
    Set<ArtifactKind> kinds();

    /**
     * Every {@link StoredArtifact#mode()} this strategy writes, so that an artifact is read back
     * ({@link #materialise}, {@link #compact}, {@link #verify}, {@link #delete}) by a strategy that
     * understands it ({@link StorageStrategies#reader}), whichever strategy would be chosen today.
     */
    Set<String> modes();

    /**
     * Whether {@link #store} given a parent of {@code kind} keeps only what differs from it (a
     * qcow2 overlay, a page diff), so that core prefers this strategy when several work.
     */
    default boolean chains(ArtifactKind kind) {
        return false;
    }

    /**
     * Whether this strategy works for {@code kind} in directory {@code dir} without falling back
     * (reflink is a property of the filesystem, probed per directory). Cheap after the first call
     * for a filesystem.
     */
    boolean supports(ArtifactKind kind, Path dir);

    /**
     * Stores {@code source} (a live instance's disk or RAM file, paused or quiesced by the
     * caller) at {@code target}: a clone, an overlay, or, given {@code parent}, only what differs
     * from it. {@code source} is unchanged and may be used again once this returns.
     */
    StoredArtifact store(ArtifactKind kind, Path source, StoredArtifact parent, Path target, OperationContext context)
            throws IOException;

    /**
     * Makes a usable, writable file at {@code target} from a stored artifact (verifying each link
     * of a chain, remembered per file identity and modification time), without changing it: what
     * an instance starts or is restored from.
     */
    StoredArtifact materialise(StoredArtifact stored, Path target, OperationContext context) throws IOException;

    /** Writes a standalone copy of a chained artifact at {@code target} (depth 0); the chain stays. */
    StoredArtifact compact(StoredArtifact stored, Path target, OperationContext context) throws IOException;

    /** Throws {@link IOException} naming the first link whose content or parent hash does not match. */
    void verify(StoredArtifact stored) throws IOException;

    /**
     * Deletes the artifact's own files (never its parent's). The caller makes sure nothing depends
     * on it; idempotent.
     */
    void delete(StoredArtifact stored) throws IOException;
}
