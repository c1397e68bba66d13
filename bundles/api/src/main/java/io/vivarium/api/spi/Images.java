package io.vivarium.api.spi;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import io.vivarium.api.ApiException;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Images: forkable snapshots that core keeps in its registry (build from a fresh instance, branch
 * a running one, fork N children, delete), shared by every child forked from them. An optional
 * seam: the backend's bundle registers it as a service of its own with the backend's
 * {@value SandboxBackend#NAME_PROPERTY}, and core derives {@link io.vivarium.api.Capability#SNAPSHOT},
 * {@link io.vivarium.api.Capability#BRANCH} and {@link io.vivarium.api.Capability#FORK} from it. Not
 * {@link Checkpoints}, which are local to one instance.
 *
 * <p>Core owns the directories: it gives {@link #capture} an empty staging directory, renames it
 * into place once the call returns and records the image; an image directory holds only what the
 * backend wrote. Every artifact is written and read through the {@link StorageStrategies} core
 * passes, so the copy-on-write mode is the installed strategies' business, not the backend's.
 * Since 1.3; a service of its own since 2.0.
 */
@ConsumerType
public interface Images {

    /** An image of the instance's files only (a process sandbox: the memory of its processes is not captured). */
    String FILES = "files";
    /** An image of the instance's files and memory (a VM): children resume where it was. */
    String FILES_AND_MEMORY = "files+memory";

    /** What this backend's images capture: {@link #FILES} or {@link #FILES_AND_MEMORY}. */
    String captures();

    /**
     * Writes the state of a running {@code instance} into {@code imageDir} (empty, on the
     * filesystem the image will stay on). The instance keeps running; it may be paused or frozen
     * for the moment the state is stored, which the result reports. Throws {@link ApiException}
     * with what failed; core deletes the directory after a failure.
     */
    CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage, OperationContext context);

    /**
     * Creates and starts a new instance from the image in {@code imageDir}, with its own writable
     * copy of every artifact (the image is never changed), under the same rules as
     * {@link SandboxBackend#create}: undo what was made on failure. Core calls it only after
     * {@link #missingArtifact} found nothing missing (a 409 otherwise), so it need not check again.
     */
    SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context);

    /**
     * Writes a standalone copy of the image in {@code from} into {@code to} (empty, staged by core
     * like a capture): every artifact at depth 0, depending on no other image, so the copy outlives
     * the chain it was made from. {@code artifacts} are those core recorded for {@code from}, by
     * path and mode only (no parent, depth 0). The default compacts each of them through the
     * strategy that reads it back ({@link StorageStrategies#reader}) to the same relative path,
     * which is right for a backend whose image directory holds nothing else; a backend that keeps
     * more beside them (a description naming the artifacts, device state) overrides it. Throws
     * {@link IOException} naming what failed; core deletes {@code to} after a failure.
     *
     * @return the artifacts written in {@code to}, with a pause of 0 and {@link #captures()}
     * @since 1.3
     */
    default CapturedImage compact(Path from, Path to, List<StoredArtifact> artifacts, StorageStrategies storage,
            OperationContext context) throws IOException {
        List<StoredArtifact> flat = new ArrayList<>();
        for (StoredArtifact a : artifacts) {
            flat.add(storage.reader(a).compact(a, to.resolve(from.relativize(a.path())), context));
        }
        return new CapturedImage(List.copyOf(flat), 0, captures());
    }

    /**
     * The first artifact the image in {@code imageDir} needs that is missing or unreadable, named
     * so a person can find it, or null when it can be forked. Cheap: no content is read. Core asks
     * before every fork and answers 409 with it.
     */
    String missingArtifact(Path imageDir);
}
