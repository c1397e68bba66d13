package io.vivarium.core.internal;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;

/**
 * Sandbox ids: new ones are {@code sb-} and 12 hex digits; anything a caller sends must be lower-case
 * letters, digits and dashes before it is used in a path.
 */
final class SandboxIds {
    private static final Pattern VALID = Pattern.compile("[a-z0-9][a-z0-9-]{0,63}");
    private static final SecureRandom RANDOM = new SecureRandom();

    private SandboxIds() {
    }

    static String next() {
        byte[] b = new byte[6];
        RANDOM.nextBytes(b);
        return "sb-" + HexFormat.of().formatHex(b);
    }

    /** Throws 400 for something that cannot be an id, so it never reaches a path or a command. */
    static String check(String id) {
        if (id == null || !VALID.matcher(id).matches()) {
            throw ApiException.badRequest("invalid sandbox id: expected lower-case letters, digits and dashes "
                    + "(at most 64), like sb-0123456789ab");
        }
        return id;
    }
}
