package io.vivarium.core.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import io.vivarium.common.files.AtomicFiles;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

/**
 * Sandbox records on disk: one directory per sandbox under {@code <state>/sandboxes}, holding
 * core's record ({@value #RECORD}) and whatever the backend keeps there (workspace, logs).
 */
final class SandboxStore {
    static final String RECORD = "sandbox.json";

    private final Path root;
    private final ObjectMapper json = new ObjectMapper()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(SerializationFeature.INDENT_OUTPUT);

    SandboxStore(Path stateDir) {
        this.root = stateDir.resolve("sandboxes");
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create state directory " + root, e);
        }
    }

    Path dirOf(String id) {
        return root.resolve(id);
    }

    /** Creates the sandbox's directory; fails if the id is taken. */
    Path createDir(String id) throws IOException {
        Path dir = Files.createDirectory(dirOf(id));
        AtomicFiles.fsyncDirectory(root);
        return dir;
    }

    void save(SandboxRecord record) throws IOException {
        AtomicFiles.write(dirOf(record.id()).resolve(RECORD), json.writeValueAsBytes(record));
    }

    /** Every readable record; directories without one (a create cut short before it) are removed. */
    List<SandboxRecord> loadAll(java.util.function.BiConsumer<Path, Exception> onUnreadable) throws IOException {
        List<SandboxRecord> records = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, Files::isDirectory)) {
            for (Path dir : dirs) {
                Path file = dir.resolve(RECORD);
                if (!Files.exists(file)) {
                    removeDir(dir);
                    continue;
                }
                try {
                    records.add(json.readValue(file.toFile(), SandboxRecord.class));
                } catch (IOException e) {
                    onUnreadable.accept(file, e);
                }
            }
        }
        return records;
    }

    /** Removes the sandbox's directory: the record first, so a crash midway leaves no half record. */
    void remove(String id) throws IOException {
        Path dir = dirOf(id);
        Files.deleteIfExists(dir.resolve(RECORD));
        removeDir(dir);
    }

    private static void removeDir(Path dir) throws IOException {
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
