package io.vivarium.launcher;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;

import io.vivarium.common.files.AtomicFiles;

/** The default token file: a comment on the roles and one operator token for the tenant {@code default}. */
final class Tokens {

    /** What the file says about itself, above its token. */
    static final String HEADER = """
            # Vivarium bearer tokens, one per line: <token> <tenant> <role>. Lines starting with # are comments;
            # a line with only a token is an admin of tenant "default". The daemon re-reads this file when it
            # changes: add or revoke a token, or change its role, without a restart.
            #
            # Roles, each allowed everything the one before it may:
            #   user      creates, lists, pauses, touches and deletes its tenant's sandboxes
            #   admin     also reaches into them: exec, eval, files, change-sets, dry-runs, branches, checkpoints
            #   operator  also administers the daemon for every tenant: plugins and features
            #             (./vivarium plugins|features, /v1/plugins, /v1/features)
            #
            # Upgrading a file written before the operator role existed: it keeps working, but its admins get
            # 403 from plugin and feature administration. Change 'admin' to 'operator' on the line of the token
            # that administers the daemon.
            """;

    private Tokens() {
    }

    /**
     * Creates {@code file} with {@link #HEADER} and one line {@code <64 hex chars> default operator}
     * unless it exists. The file is mode 0600 and written atomically; a token another process made
     * meanwhile is kept.
     *
     * @return true if the file was created
     */
    static boolean createIfAbsent(Path file) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        String text = HEADER + HexFormat.of().formatHex(secret) + " default operator\n";
        return AtomicFiles.createIfAbsent(file, text.getBytes(StandardCharsets.US_ASCII),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    }
}
