package io.vivarium.http.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.Caller;
import io.vivarium.api.Role;

/**
 * Bearer tokens from a file, one per line: {@code <token> <tenant> <role>}, where role is
 * {@code user}, {@code admin} or {@code operator}. A line holding only a token is an admin of
 * tenant {@code default}. Blank lines and lines starting with {@code #} are ignored. The file is
 * re-read when its modification time changes, so tokens can be added or revoked without a restart.
 */
final class TokenFile {
    static final String DEFAULT_TENANT = "default";

    /** How to get a token for daemon-wide administration, for the 403 and the warning at start. */
    static final String HOW_TO_GET_AN_OPERATOR_TOKEN = "an operator token is a token-file line '<token> <tenant> operator';"
            + " in a token file written before the operator role existed, change 'admin' to 'operator' on the line of"
            + " the token that administers the daemon (the file is re-read when it changes, no restart needed)";

    /**
     * Never used itself, only cloned: {@link MessageDigest#getInstance} looks the algorithm up among
     * the security providers at every call, a third of a token check's CPU (async-profiler, a request
     * through an exposed port), a clone copies eight words of state.
     */
    private static final MessageDigest SHA_256;

    static {
        try {
            SHA_256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private final Path file;
    private volatile Snapshot snapshot = new Snapshot(null, Map.of());

    private record Snapshot(FileTime mtime, Map<String, Caller> byDigest) {
    }

    TokenFile(Path file) {
        this.file = file;
    }

    /** The caller a token belongs to, if it is listed. */
    Optional<Caller> lookup(String token) throws IOException {
        return Optional.ofNullable(current().byDigest().get(digest(token)));
    }

    /** Whether any token of the file may administer the daemon ({@link Role#OPERATOR}). */
    boolean hasOperator() throws IOException {
        return current().byDigest().values().stream().anyMatch(c -> c.role() == Role.OPERATOR);
    }

    Path file() {
        return file;
    }

    private Snapshot current() throws IOException {
        FileTime mtime = Files.getLastModifiedTime(file);
        Snapshot s = snapshot;
        if (!mtime.equals(s.mtime())) {
            s = new Snapshot(mtime, parse(Files.readString(file, StandardCharsets.UTF_8)));
            snapshot = s;
        }
        return s;
    }

    /** Parses the file's content; keys are SHA-256 digests so lookups do not leak token prefixes by timing. */
    static Map<String, Caller> parse(String content) {
        Map<String, Caller> tokens = new HashMap<>();
        String[] lines = content.split("\n");
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f.length != 1 && f.length != 3) {
                throw new IllegalArgumentException("token file line " + (i + 1)
                        + ": expected '<token>' or '<token> <tenant> <role>'");
            }
            if (f.length == 3 && f[1].startsWith("_")) {
                throw new IllegalArgumentException("token file line " + (i + 1) + ": tenant " + f[1] + " starts with '_', "
                        + "which the daemon keeps for its own (its templates' setup snapshots); name the tenant otherwise");
            }
            Caller caller = f.length == 1 ? new Caller(DEFAULT_TENANT, Role.ADMIN) : new Caller(f[1], role(f[2], i + 1));
            tokens.put(digest(f[0]), caller);
        }
        return Map.copyOf(tokens);
    }

    private static Role role(String s, int line) {
        return switch (s.toLowerCase(Locale.ROOT)) {
            case "admin" -> Role.ADMIN;
            case "user" -> Role.USER;
            case "operator" -> Role.OPERATOR;
            default -> throw new IllegalArgumentException("token file line " + line
                    + ": role must be user, admin or operator, got " + s);
        };
    }

    private static String digest(String token) {
        try {
            MessageDigest sha256 = (MessageDigest) SHA_256.clone();
            return HexFormat.of().formatHex(sha256.digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException("the SHA-256 of this JDK cannot be cloned", e);
        }
    }
}
