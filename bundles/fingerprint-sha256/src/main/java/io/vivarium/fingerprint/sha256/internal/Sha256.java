package io.vivarium.fingerprint.sha256.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Streams a file through the JDK's SHA-256, which uses the CPU's SHA instructions where there are
 * any (several times faster than coreutils' sha256sum). Safe to call from many threads at once.
 */
final class Sha256 {

    private static final int BUFFER_BYTES = 256 * 1024;

    // Allocating a fresh buffer per file costs more than hashing a small file. A heap buffer, since
    // MessageDigest reads a direct one through a 4 KiB copy loop.
    private static final ThreadLocal<ByteBuffer> BUFFER =
            ThreadLocal.withInitial(() -> ByteBuffer.allocate(BUFFER_BYTES));

    private Sha256() {
    }

    /** The lowercase hex SHA-256 of the file's content. */
    static String hex(Path file) throws IOException {
        MessageDigest digest = newDigest();
        ByteBuffer buffer = BUFFER.get().clear(); // a read that threw may have left bytes in it
        // O_NOFOLLOW: a file swapped for a symlink after the walk must not lead out of the sandbox
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            while (channel.read(buffer) >= 0) {
                digest.update(buffer.flip());
                buffer.clear();
            }
        }
        return HexFormat.of().formatHex(digest.digest());
    }

    private static MessageDigest newDigest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
