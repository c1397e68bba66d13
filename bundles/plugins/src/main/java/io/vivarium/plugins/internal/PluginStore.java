package io.vivarium.plugins.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.common.files.AtomicFiles;

/**
 * The jars installed or updated through the admin API, {@code <state>/plugins/<symbolicName>.jar},
 * so that they come back after a restart (the framework cache is cleaned at every start).
 */
final class PluginStore {
    private static final String SUFFIX = ".jar";

    private final Path dir;

    PluginStore(Path dir) {
        this.dir = dir;
    }

    /** Symbolic names are dot-separated tokens (checked by {@link BundleIdentity}), so they are safe file names. */
    private Path file(String symbolicName) {
        return dir.resolve(symbolicName + SUFFIX);
    }

    Optional<byte[]> read(String symbolicName) {
        Path f = file(symbolicName);
        try {
            return Files.isRegularFile(f) ? Optional.of(Files.readAllBytes(f)) : Optional.empty();
        } catch (IOException e) {
            throw ApiException.internal("cannot read the stored plugin " + f + ": " + e.getMessage(), e);
        }
    }

    void write(String symbolicName, byte[] jar) {
        try {
            Files.createDirectories(dir);
            AtomicFiles.write(file(symbolicName), jar);
        } catch (IOException e) {
            throw ApiException.internal("cannot store the plugin in " + dir + ": " + e.getMessage(), e);
        }
    }

    void delete(String symbolicName) {
        try {
            AtomicFiles.delete(file(symbolicName));
        } catch (IOException e) {
            throw ApiException.internal("cannot remove the stored plugin " + file(symbolicName) + ": " + e.getMessage(), e);
        }
    }

    List<Path> jars() throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(SUFFIX)).sorted().toList();
        }
    }
}
