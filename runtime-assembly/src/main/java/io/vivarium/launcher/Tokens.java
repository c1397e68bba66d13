package io.vivarium.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;

import io.vivarium.common.files.AtomicFiles;

/** The default token file: one admin token for the tenant {@code default}. */
final class Tokens {

    private Tokens() {
    }

    /**
     * Creates {@code file} with one line {@code <64 hex chars> default admin} unless it exists.
     * The file is mode 0600 and written atomically; a token another process made meanwhile is kept.
     *
     * @return true if the file was created
     */
    static boolean createIfAbsent(Path file) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        String line = HexFormat.of().formatHex(secret) + " default admin\n";
        return AtomicFiles.createIfAbsent(file, line.getBytes(StandardCharsets.US_ASCII),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    }
}
