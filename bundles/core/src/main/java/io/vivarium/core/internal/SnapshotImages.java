package io.vivarium.core.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.vivarium.common.files.AtomicFiles;
import io.vivarium.api.state.RecordCollection;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Snapshot images on disk: {@code <state>/snapshots/<tenant>/<tag>/} holds the image
 * ({@value #IMAGE}/) once complete and, while it is written, its staging directory
 * ({@value #STAGING}/), renamed to {@value #IMAGE} last. The records are in the state store's
 * {@code snapshots} collection; a {@value #LEGACY_RECORD} found here was written before they moved
 * there and is migrated at start ({@link Snapshots#open}). The only class that touches these files.
 */
final class SnapshotImages {
    static final String LEGACY_RECORD = "snapshot.json";
    static final String IMAGE = "image";
    static final String STAGING = "image.staging";

    private final Path root;
    private final ObjectMapper json = new ObjectMapper().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    SnapshotImages(Path stateDir) {
        this.root = stateDir.resolve("snapshots");
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create state directory " + root, e);
        }
    }

    Path dirOf(String tenant, String tag) {
        return root.resolve(SnapshotTags.tenantDir(tenant)).resolve(tag);
    }

    Path imageOf(SnapshotRecord r) {
        return dirOf(r.tenant(), r.tag()).resolve(IMAGE);
    }

    /** Creates the snapshot's empty directory once its record holds the tag; removes what a failed delete left there. */
    void create(SnapshotRecord r) throws IOException {
        Path tenantDir = Files.createDirectories(root.resolve(SnapshotTags.tenantDir(r.tenant())));
        Path dir = tenantDir.resolve(r.tag());
        removeTree(dir);
        Files.createDirectory(dir);
        AtomicFiles.fsyncDirectory(tenantDir);
    }

    /** An empty staging directory for the image, replacing whatever an earlier attempt left. */
    Path staging(SnapshotRecord r) throws IOException {
        Path staging = dirOf(r.tenant(), r.tag()).resolve(STAGING);
        removeTree(staging);
        return Files.createDirectory(staging);
    }

    /** Renames the staged image into place. */
    void publish(SnapshotRecord r) throws IOException {
        Path dir = dirOf(r.tenant(), r.tag());
        Files.move(dir.resolve(STAGING), dir.resolve(IMAGE), StandardCopyOption.ATOMIC_MOVE);
        AtomicFiles.fsyncDirectory(dir);
    }

    void discardStaging(SnapshotRecord r) throws IOException {
        removeTree(dirOf(r.tenant(), r.tag()).resolve(STAGING));
    }

    /** Every snapshot directory, by the state store key of its tenant and tag. */
    Map<String, Path> dirsByKey() throws IOException {
        Map<String, Path> dirs = new LinkedHashMap<>();
        try (DirectoryStream<Path> tenants = Files.newDirectoryStream(root, Files::isDirectory)) {
            for (Path tenant : tenants) {
                try (DirectoryStream<Path> tags = Files.newDirectoryStream(tenant, Files::isDirectory)) {
                    for (Path dir : tags) {
                        String key = SnapshotTags.keyOfDirs(tenant.getFileName().toString(), dir.getFileName().toString());
                        if (RecordCollection.isKey(key)) {
                            dirs.put(key, dir);
                        }
                    }
                }
            }
        }
        return dirs;
    }

    /** The record a daemon before the state store wrote in {@code dir}, if there is one. */
    Optional<SnapshotRecord> legacyRecord(Path dir) throws IOException {
        Path file = dir.resolve(LEGACY_RECORD);
        return Files.exists(file) ? Optional.of(json.readValue(file.toFile(), SnapshotRecord.class)) : Optional.empty();
    }

    void removeLegacyRecord(Path dir) throws IOException {
        AtomicFiles.delete(dir.resolve(LEGACY_RECORD));
    }

    /** Removes the snapshot's directory; its record is already gone from the store. */
    void remove(SnapshotRecord r) throws IOException {
        removeTree(dirOf(r.tenant(), r.tag()));
    }

    void remove(Path dir) throws IOException {
        removeTree(dir);
    }

    /** Apparent bytes of the snapshot's image, and what it takes on disk ({@code du}: blocks × 512), -1 if unknown. */
    long[] sizes(SnapshotRecord r) throws IOException {
        Path image = imageOf(r);
        long[] sizes = { 0, 0 };
        if (!Files.exists(image)) {
            return sizes;
        }
        try (Stream<Path> walk = Files.walk(image)) {
            for (Path p : walk.filter(Files::isRegularFile).toList()) {
                sizes[0] += Files.size(p);
            }
        }
        sizes[1] = allocated(image);
        return sizes;
    }

    private static long allocated(Path image) {
        try {
            Process du = new ProcessBuilder("du", "-s", "-B1", "--", image.toString()).redirectErrorStream(true).start();
            String out = new String(du.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (du.waitFor(10, TimeUnit.SECONDS) && du.exitValue() == 0) {
                return Long.parseLong(out.split("\\s+")[0]);
            }
            du.destroyForcibly();
            return -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static void removeTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
