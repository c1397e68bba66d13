package io.vivarium.images.oci.internal;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

/** OCI's {@code sha256:<hex>} digests: what one looks like, and how one is computed. */
final class Sha256 {

    private static final String PREFIX = "sha256:";
    private static final Pattern DIGEST = Pattern.compile(PREFIX + "[0-9a-f]{64}");

    private Sha256() {
    }

    /** Whether {@code digest} is a well-formed {@code sha256:<64 hex>} (never a path: no separator can be in it). */
    static boolean isDigest(String digest) {
        return digest != null && DIGEST.matcher(digest).matches();
    }

    /** {@code digest}'s hex, without its {@code sha256:}. */
    static String hex(String digest) {
        return digest.substring(PREFIX.length());
    }

    static MessageDigest hasher() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The digest of what {@code hasher} has read. */
    static String digestOf(MessageDigest hasher) {
        return PREFIX + HexFormat.of().formatHex(hasher.digest());
    }

    static String digestOf(byte[] bytes) {
        MessageDigest hasher = hasher();
        hasher.update(bytes);
        return digestOf(hasher);
    }
}
