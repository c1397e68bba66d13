package io.vivarium.common.ports;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Base64;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExposedPort;
import io.vivarium.api.PortService;
import io.vivarium.common.files.AtomicFiles;

/**
 * Signs and checks the tokens of exposed ports: {@code <expiry epoch seconds>.<HMAC-SHA256>} over
 * the sandbox, the port, the nonce of its exposure and the expiry, with a key of this daemon's
 * ({@value #KEY_FILE} in its state directory, made once, root only), so that tokens outlive a
 * restart and a port closed and exposed again (a new nonce) refuses the old ones. Core signs those
 * of its own sandboxes; a fleet's master those of its nodes' sandboxes, with the same key.
 */
public final class PortTokens {
    public static final String KEY_FILE = "port-tokens.key";
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

    private final byte[] key;

    public PortTokens(Path stateDir) {
        Path file = stateDir.resolve(KEY_FILE);
        try {
            byte[] fresh = new byte[32];
            RANDOM.nextBytes(fresh);
            AtomicFiles.createIfAbsent(file, fresh,
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            key = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read or make the port token key " + file, e);
        }
        if (key.length != 32) {
            throw new IllegalStateException(file + " holds " + key.length + " bytes, not 32: remove it (tokens it signed stop working)");
        }
    }

    /** A new nonce for an exposure. */
    public static String nonce() {
        byte[] b = new byte[12];
        RANDOM.nextBytes(b);
        return B64.encodeToString(b);
    }

    public String sign(String sandboxId, int port, String nonce, Instant expiresAt) {
        long exp = expiresAt.getEpochSecond();
        return exp + "." + mac(sandboxId, port, nonce, exp);
    }

    /** Whether {@code token} was signed for this exposure and has not expired at {@code now}. */
    public boolean valid(String token, String sandboxId, int port, String nonce, Instant now) {
        int dot = token.indexOf('.');
        if (dot <= 0) {
            return false;
        }
        long exp;
        try {
            exp = Long.parseLong(token.substring(0, dot));
        } catch (NumberFormatException e) {
            return false;
        }
        if (now.getEpochSecond() >= exp) {
            return false;
        }
        return MessageDigest.isEqual(mac(sandboxId, port, nonce, exp).getBytes(StandardCharsets.US_ASCII),
                token.substring(dot + 1).getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * A token of {@code lifetime} for an exposure, as the routes give it: expiring on a whole second,
     * a second past the lifetime (so that it lasts at least that long).
     */
    public ExposedPort grant(String sandboxId, int port, String nonce, Duration lifetime) {
        Instant expires = Instant.now().plus(lifetime).plusSeconds(1).truncatedTo(ChronoUnit.SECONDS);
        return new ExposedPort(port, sign(sandboxId, port, nonce, expires), expires);
    }

    /** A caller's port (1 to 65535); 400 otherwise. */
    public static void checkPort(int port) {
        if (port < 1 || port > 65535) {
            throw ApiException.badRequest("port must be 1 to 65535, not " + port);
        }
    }

    /** A caller's token lifetime (1 s to {@link PortService#MAX_TOKEN_LIFETIME}); 400 otherwise. */
    public static void checkLifetime(Duration lifetime) {
        if (lifetime.compareTo(Duration.ofSeconds(1)) < 0 || lifetime.compareTo(PortService.MAX_TOKEN_LIFETIME) > 0) {
            throw ApiException.badRequest("expires_in_secs must be 1 to " + PortService.MAX_TOKEN_LIFETIME.toSeconds()
                    + " (7 days), not " + lifetime.toSeconds());
        }
    }

    /** The 404 of a port that is not exposed, saying how to expose it. */
    public static ApiException notExposed(String sandboxId, int port) {
        return ApiException.notFound("port " + port + " of sandbox " + sandboxId + " is not exposed (POST /v1/sandboxes/"
                + sandboxId + "/ports {\"port\": " + port + "})");
    }

    private String mac(String sandboxId, int port, String nonce, long exp) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return B64.encodeToString(mac.doFinal((sandboxId + "\n" + port + "\n" + nonce + "\n" + exp).getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("every JDK has HmacSHA256", e);
        }
    }
}
