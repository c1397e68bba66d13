package io.vivarium.testkit;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import io.vivarium.testkit.StorageStrategySuite.ArtifactContent;

/**
 * A directory tree standing for its content: the bytes split into 1 MiB files spread over nested
 * folders, named so that their order by relative path is the content's order, plus an empty
 * folder. Its state is every entry's relative path, content and modification time, folders'
 * included, so a strategy that writes anything into its source is seen.
 */
final class TreeContent implements ArtifactContent {

    private static final int PART = 1 << 20;
    private static final String EMPTY = "z-empty";

    @Override
    public void write(Path path, byte[] content) throws IOException {
        Files.createDirectories(path.resolve(EMPTY));
        for (int i = 0; i * PART < content.length; i++) {
            Path part = part(path, i);
            Files.createDirectories(part.getParent());
            Files.write(part, Arrays.copyOfRange(content, i * PART, Math.min(content.length, (i + 1) * PART)));
        }
    }

    @Override
    public void fill(Path path, long offset, int length, byte value) throws IOException {
        for (long at = offset; at < offset + length; at = (at / PART + 1) * PART) {
            long end = Math.min(offset + length, (at / PART + 1) * PART);
            FILE.fill(part(path, (int) (at / PART)), at % PART, (int) (end - at), value);
        }
    }

    @Override
    public byte[] read(Path path) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (Path file : entries(path)) {
            if (Files.isRegularFile(file)) {
                all.write(Files.readAllBytes(file));
            }
        }
        return all.toByteArray();
    }

    @Override
    public Object state(Path path) throws IOException {
        List<Object> state = new ArrayList<>();
        for (Path entry : entries(path)) {
            state.add(List.of(path.relativize(entry).toString(),
                    Files.isDirectory(entry) ? "folder" : Arrays.hashCode(Files.readAllBytes(entry)),
                    Files.getLastModifiedTime(entry)));
        }
        return state;
    }

    /** Part {@code i}: two levels of folders, eight parts per first-level folder, two per second. */
    private static Path part(Path root, int i) {
        return root.resolve(String.format("g%02d/h%02d/part-%04d", i / 8, i / 2 % 4, i));
    }

    /** The root and everything below it, ordered by relative path. */
    private static List<Path> entries(Path root) throws IOException {
        if (!Files.isDirectory(root)) {
            throw new IOException(root + " is not a directory");
        }
        try (Stream<Path> all = Files.walk(root)) {
            return all.sorted((a, b) -> root.relativize(a).toString().compareTo(root.relativize(b).toString()))
                    .toList();
        }
    }
}
