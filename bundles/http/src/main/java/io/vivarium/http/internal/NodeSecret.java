package io.vivarium.http.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;

import io.vivarium.api.ApiException;
import io.vivarium.api.http.NodeHeaders;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;

/**
 * The master's credential on a node (seed 003, "POST /v1/nodes"): the node's pairing secret, the
 * second half of its pairing code, in the file the launcher names ({@code vivarium.node.secret.file},
 * {@code <state>/pki/node/pairing-secret}). A bearer token equal to it is the master acting for a
 * tenant, which it names in {@link #TENANT_HEADER} and {@link #ROLE_HEADER}: the master enforces
 * tenancy, the node trusts it to. The file is re-read when its modification time changes; a missing
 * file (deleted to change the code, until the restart that makes a new one) matches no token.
 */
final class NodeSecret {
    static final String TENANT_HEADER = NodeHeaders.TENANT;
    static final String ROLE_HEADER = NodeHeaders.ROLE;
    /** The tenant the master acts for without {@link #TENANT_HEADER}. */
    static final String DEFAULT_TENANT = TokenFile.DEFAULT_TENANT;

    private final Path file;
    private volatile Snapshot snapshot = new Snapshot(null, null);

    /** The secret's bytes as read at {@code mtime}; null bytes when the file is missing or empty. */
    private record Snapshot(FileTime mtime, byte[] secret) {
    }

    NodeSecret(Path file) {
        this.file = file;
    }

    Path file() {
        return file;
    }

    /** Whether {@code token} is the pairing secret, compared in constant time. */
    boolean matches(String token) throws IOException {
        byte[] secret = current();
        return secret != null && MessageDigest.isEqual(secret, token.getBytes(StandardCharsets.UTF_8));
    }

    private byte[] current() throws IOException {
        FileTime mtime;
        try {
            mtime = Files.getLastModifiedTime(file);
        } catch (NoSuchFileException e) {
            snapshot = new Snapshot(null, null);
            return null;
        }
        Snapshot s = snapshot;
        if (!mtime.equals(s.mtime())) {
            byte[] secret;
            try {
                String text = Files.readString(file, StandardCharsets.UTF_8).strip();
                secret = text.isEmpty() ? null : text.getBytes(StandardCharsets.UTF_8);
            } catch (NoSuchFileException e) {
                secret = null;
            }
            s = new Snapshot(mtime, secret);
            snapshot = s;
        }
        return s.secret();
    }

    /**
     * The caller the master acts as, from its two headers (each may be absent: tenant
     * {@value #DEFAULT_TENANT}, role operator); a malformed one is a 400 that says what is allowed.
     */
    static Caller masterCaller(String tenantHeader, String roleHeader) {
        String tenant = tenantHeader == null ? DEFAULT_TENANT : tenantHeader.strip();
        if (!NodeHeaders.TENANT_NAME.matcher(tenant).matches()) {
            throw ApiException.badRequest(TENANT_HEADER + " must be a tenant name (letters, digits, '.', '_' and '-', up to 64,"
                    + " starting with a letter or digit), got \"" + printable(tenant) + "\"");
        }
        Role role;
        String r = roleHeader == null ? "operator" : roleHeader.strip();
        role = switch (r) {
            case "user" -> Role.USER;
            case "admin" -> Role.ADMIN;
            case "operator" -> Role.OPERATOR;
            default -> throw ApiException.badRequest(ROLE_HEADER + " must be user, admin or operator, got \"" + printable(r) + "\"");
        };
        return new Caller(tenant, role);
    }

    /** A header value quoted back without control characters and at a bounded length. */
    private static String printable(String s) {
        String shown = s.length() > 80 ? s.substring(0, 80) + "..." : s;
        return shown.replaceAll("[\\p{Cntrl}\"\\\\]", "?");
    }
}
