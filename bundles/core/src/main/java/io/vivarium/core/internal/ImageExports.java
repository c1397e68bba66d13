package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.files.FileClones;
import io.vivarium.common.testpoints.TestPoints;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * What core sends to another node for a tag ({@link ImageCopies}). An image whose artifacts are all
 * workspace trees is sent as it is. Any other (a VM's disk and memory, a gVisor checkpoint) may be
 * stored on files only this host has — a parent snapshot's qcow2 or diff chain — so it is compacted
 * once through its backend ({@link Captures#flatten}) into {@value #EXPORT}/ beside the image and
 * that flat copy is sent; it stays until the tag is deleted (its directory goes with it), so a second
 * node fetching the tag compacts nothing. {@value #LISTED} names the export's artifacts and is written
 * last: an export without it was cut short (a crash) and is made again.
 */
final class ImageExports {
    static final String EXPORT = "export";
    private static final String STAGING = "export.staging";
    private static final String LISTED = "export.json";

    /** The directory to send and the record that describes it. */
    record Export(Path dir, SnapshotRecord record) {
    }

    private final Snapshots snapshots;
    private final Captures captures;
    private final ObjectMapper json = new ObjectMapper();
    /** One export of a tag at a time; an entry per tag exported while the daemon runs. */
    private final Map<Path, Object> making = new ConcurrentHashMap<>();

    ImageExports(Snapshots snapshots, Captures captures) {
        this.snapshots = snapshots;
        this.captures = captures;
    }

    /** What to send for the ready record {@code r}: its image, or its flat export, made now if there is none yet. */
    Export of(SnapshotRecord r) {
        if (r.artifacts().stream().allMatch(a -> ArtifactKind.WORKSPACE.name().equals(a.kind()))) {
            return new Export(snapshots.images().imageOf(r), r);
        }
        Path dir = snapshots.images().dirOf(r.tenant(), r.tag());
        synchronized (making.computeIfAbsent(dir, k -> new Object())) {
            try {
                List<SnapshotRecord.Artifact> artifacts = Files.exists(dir.resolve(LISTED)) ? read(dir) : export(r, dir);
                return new Export(dir.resolve(EXPORT), r.ready(r.captures(), r.pauseMs(), artifacts));
            } catch (IOException e) {
                throw ApiException.internal("cannot make a flat copy of snapshot " + r.tag() + " to send: " + e.getMessage(), e);
            }
        }
    }

    private List<SnapshotRecord.Artifact> read(Path dir) throws IOException {
        return List.of(json.readValue(dir.resolve(LISTED).toFile(), SnapshotRecord.Artifact[].class));
    }

    private List<SnapshotRecord.Artifact> export(SnapshotRecord r, Path dir) throws IOException {
        Path staging = dir.resolve(STAGING);
        FileClones.deleteTree(staging);
        FileClones.deleteTree(dir.resolve(EXPORT));
        try {
            Files.createDirectory(staging);
            List<SnapshotRecord.Artifact> artifacts = captures.flatten(r, staging, captures.exporting(r.tag()));
            TestPoints.reach("snapshot.export.staged");
            Files.move(staging, dir.resolve(EXPORT), StandardCopyOption.ATOMIC_MOVE);
            AtomicFiles.write(dir.resolve(LISTED), json.writeValueAsBytes(artifacts));
            return artifacts;
        } catch (IOException | RuntimeException e) {
            FileClones.deleteTree(staging);
            throw e;
        }
    }
}
