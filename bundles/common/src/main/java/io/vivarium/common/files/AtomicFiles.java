package io.vivarium.common.files;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;

/**
 * Writes files so that a crash at any moment leaves either the old content or the new, never half:
 * a temporary file beside the target, written fully and fsynced, renamed over it, then an fsync of
 * the directory so that the rename itself survives a power loss. The one copy of this logic: the
 * launcher (token file), core (sandbox records, baselines) and plugins (stored jars, the enabled
 * features) all write through it.
 */
public final class AtomicFiles {

    /** How files and directories are opened; a test substitutes channels that record or write short. */
    interface Channels {
        FileChannel open(Path path, OpenOption... options) throws IOException;
    }

    private static final AtomicFiles DEFAULT = new AtomicFiles(FileChannel::open);

    private final Channels channels;

    AtomicFiles(Channels channels) {
        this.channels = channels;
    }

    /** Replaces {@code target} (or creates it) with {@code content}; its folder must exist. */
    public static void write(Path target, byte[] content) throws IOException {
        DEFAULT.replace(target, content, true);
    }

    /**
     * As {@link #write}, without waiting for the disk: a crash of this process still leaves the old
     * content or the new, but a loss of power may leave the old content, the new, or an empty file
     * (the rename on the disk before the data), never a part of the new.
     */
    public static void writeWithoutSync(Path target, byte[] content) throws IOException {
        DEFAULT.replace(target, content, false);
    }

    /**
     * Creates {@code target} with {@code content} unless it exists (also when another process
     * creates it meanwhile: link(2), unlike rename(2), fails on an existing name).
     *
     * @param attributes of the new file, e.g. its permissions, set before any byte is written
     * @return true if this call created it
     */
    public static boolean createIfAbsent(Path target, byte[] content, FileAttribute<?>... attributes) throws IOException {
        return DEFAULT.create(target, content, attributes);
    }

    /** Deletes {@code target} durably; false if it did not exist. */
    public static boolean delete(Path target) throws IOException {
        return DEFAULT.remove(target);
    }

    /** Makes a rename, a new entry or a removal in {@code dir} durable. */
    public static void fsyncDirectory(Path dir) throws IOException {
        DEFAULT.syncDirectory(dir);
    }

    /** Makes what was written to the file {@code file} (by another process too) durable. */
    public static void fsync(Path file) throws IOException {
        try (FileChannel ch = DEFAULT.channels.open(file, StandardOpenOption.WRITE)) {
            ch.force(true);
        }
    }

    void replace(Path target, byte[] content, boolean sync) throws IOException {
        Path dir = folderOf(target);
        Path tmp = writeTemp(dir, target, content, sync);
        try {
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("the file system of " + dir + " does not support atomic rename", e);
            }
            if (sync) {
                syncDirectory(dir);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    boolean create(Path target, byte[] content, FileAttribute<?>... attributes) throws IOException {
        if (Files.exists(target)) {
            return false;
        }
        Path dir = folderOf(target);
        Path tmp = writeTemp(dir, target, content, true, attributes);
        try {
            Files.createLink(target, tmp);
        } catch (FileAlreadyExistsException raced) {
            return false;
        } finally {
            Files.deleteIfExists(tmp);
        }
        syncDirectory(dir);
        return true;
    }

    boolean remove(Path target) throws IOException {
        if (!Files.deleteIfExists(target)) {
            return false;
        }
        syncDirectory(folderOf(target));
        return true;
    }

    void syncDirectory(Path dir) throws IOException {
        try (FileChannel ch = channels.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    /** A hidden temporary file in {@code dir} holding all of {@code content}, fsynced if {@code sync}. */
    private Path writeTemp(Path dir, Path target, byte[] content, boolean sync, FileAttribute<?>... attributes)
            throws IOException {
        Path tmp = Files.createTempFile(dir, "." + target.getFileName() + ".", ".tmp", attributes);
        try (FileChannel ch = channels.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buf = ByteBuffer.wrap(content);
            while (buf.hasRemaining()) {
                ch.write(buf); // a write may take fewer bytes than asked
            }
            if (sync) {
                ch.force(true);
            }
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        return tmp;
    }

    private static Path folderOf(Path target) {
        return target.toAbsolutePath().getParent();
    }
}
