package io.vivarium.launcher;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;

/** The default token file: one admin token for the tenant {@code default}. */
final class Tokens {

    private Tokens() {
    }

    /**
     * Creates {@code file} with one line {@code <64 hex chars> default admin} unless it exists.
     * The file is mode 0600 and written atomically (temp file, fsync, rename, fsync of the folder).
     *
     * @return true if the file was created
     */
    static boolean createIfAbsent(Path file) throws IOException {
        if (Files.exists(file)) {
            return false;
        }
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        String line = HexFormat.of().formatHex(secret) + " default admin\n";
        Path tmp = Files.createTempFile(dir, "." + file.getFileName() + ".", ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer buf = ByteBuffer.wrap(line.getBytes(StandardCharsets.US_ASCII));
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            // link(2), unlike rename(2), fails if the file exists: a token another process made meanwhile is kept
            Files.createLink(file, tmp);
        } catch (FileAlreadyExistsException raced) {
            return false;
        } finally {
            Files.deleteIfExists(tmp);
        }
        fsyncDirectory(dir);
        return true;
    }

    static void fsyncDirectory(Path dir) {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException | UnsupportedOperationException e) {
            // not every file system lets a directory be opened for fsync; the rename stands
        }
    }
}
