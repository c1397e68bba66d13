package io.vivarium.common.files;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A file that a tool writes beside its {@code target} under a hidden name and that appears at
 * {@code target} whole or not at all: {@link #publish()} fsyncs it and links it to the target
 * (link(2), unlike rename(2), never replaces an existing file), then drops the staging name. A
 * staging file left by a {@code kill -9} is removed by the next attempt for the same target, and
 * {@link #close()} removes it when the tool failed. For storage strategies, whose tools (qemu-img,
 * cp) write files of their own.
 */
public final class StagedFile implements AutoCloseable {

    private final Path target;
    private final Path staged;

    private StagedFile(Path target, Path staged) {
        this.target = target;
        this.staged = staged;
    }

    /** Stages {@code target}; throws {@link FileAlreadyExistsException} if it exists already. */
    public static StagedFile beside(Path target) throws IOException {
        Path absolute = target.toAbsolutePath();
        if (Files.exists(absolute)) {
            throw new FileAlreadyExistsException(absolute.toString(), null, "refusing to replace it");
        }
        Path staged = stagingPath(absolute);
        Files.deleteIfExists(staged);
        return new StagedFile(absolute, staged);
    }

    /** Where an attempt for {@code target} stages its file: hidden, in the same directory. */
    public static Path stagingPath(Path target) {
        Path absolute = target.toAbsolutePath();
        return absolute.resolveSibling("." + absolute.getFileName() + ".staging");
    }

    /** Where the tool writes; it does not exist until the tool makes it. */
    public Path path() {
        return staged;
    }

    public Path target() {
        return target;
    }

    /** Makes the staged file durable and puts it at {@code target}. */
    public void publish() throws IOException {
        try (FileChannel ch = FileChannel.open(staged, StandardOpenOption.READ)) {
            ch.force(true);
        }
        Files.createLink(target, staged);
        Files.delete(staged);
        AtomicFiles.fsyncDirectory(target.getParent());
    }

    /**
     * Puts the staged file at {@code target} without forcing it to disk: whole after a {@code kill -9}
     * (the page cache outlives the process), not necessarily after a power loss. For files that are
     * made again after a crash anyway, such as an instance's writable copy of an image.
     */
    public void publishUnsynced() throws IOException {
        Files.createLink(target, staged);
        Files.delete(staged);
    }

    /** Removes the staged file if it was not published. */
    @Override
    public void close() throws IOException {
        Files.deleteIfExists(staged);
    }
}
