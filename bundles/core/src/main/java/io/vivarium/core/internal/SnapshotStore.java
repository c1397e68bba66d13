package io.vivarium.core.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.stream.Stream;

import io.vivarium.common.files.AtomicFiles;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

/**
 * Snapshot records and images on disk: {@code <state>/snapshots/<tenant>/<tag>/} holds the record
 * ({@value #RECORD}, written atomically), the image ({@value #IMAGE}/) once complete, and while it
 * is written its staging directory ({@value #STAGING}/), renamed to {@value #IMAGE} last. The only
 * class that touches these files, so that the state store can take them over.
 */
final class SnapshotStore {
    static final String RECORD = "snapshot.json";
    static final String IMAGE = "image";
    static final String STAGING = "image.staging";

    private final Path root;
    private final ObjectMapper json = new ObjectMapper()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(SerializationFeature.INDENT_OUTPUT);

    SnapshotStore(Path stateDir) {
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

    /** Creates the snapshot's directory and writes its first record; false if the tag is taken. */
    boolean create(SnapshotRecord r) throws IOException {
        Path tenantDir = Files.createDirectories(root.resolve(SnapshotTags.tenantDir(r.tenant())));
        try {
            Files.createDirectory(tenantDir.resolve(r.tag()));
        } catch (FileAlreadyExistsException e) {
            return false;
        }
        AtomicFiles.fsyncDirectory(tenantDir);
        save(r);
        return true;
    }

    void save(SnapshotRecord r) throws IOException {
        AtomicFiles.write(dirOf(r.tenant(), r.tag()).resolve(RECORD), json.writeValueAsBytes(r));
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

    /** Every readable record; a directory without one (a create cut short before it) is removed. */
    List<SnapshotRecord> loadAll(BiConsumer<Path, Exception> onUnreadable) throws IOException {
        List<SnapshotRecord> records = new ArrayList<>();
        try (DirectoryStream<Path> tenants = Files.newDirectoryStream(root, Files::isDirectory)) {
            for (Path tenant : tenants) {
                try (DirectoryStream<Path> tags = Files.newDirectoryStream(tenant, Files::isDirectory)) {
                    for (Path dir : tags) {
                        Path file = dir.resolve(RECORD);
                        if (!Files.exists(file)) {
                            removeTree(dir);
                            continue;
                        }
                        try {
                            records.add(json.readValue(file.toFile(), SnapshotRecord.class));
                        } catch (IOException e) {
                            onUnreadable.accept(file, e);
                        }
                    }
                }
            }
        }
        return records;
    }

    /** Removes the snapshot: the record first, so a crash midway leaves no record of a half-deleted image. */
    void remove(SnapshotRecord r) throws IOException {
        Path dir = dirOf(r.tenant(), r.tag());
        Files.deleteIfExists(dir.resolve(RECORD));
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
