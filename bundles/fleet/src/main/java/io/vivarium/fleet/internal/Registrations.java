package io.vivarium.fleet.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;

/**
 * Registration tokens, which a node that dials in redeems once for the credential it polls with.
 * Only their SHA-256 is kept, with the pool they register into and when they expire.
 */
final class Registrations {
    static final long DEFAULT_TTL_SECS = 3600;
    static final long MAX_TTL_SECS = 7 * 24 * 3600;

    /**
     * A token as kept: the pool its node joins (asked; a different fingerprint splits it), its
     * expiry, and the node id it is for if the operator named one (only such a token registers a
     * node over an existing record of that id).
     */
    record Registration(String pool, long expiresAtUnix, String nodeId) {
    }

    /** The answer to {@code POST /v1/node/tokens}: the token itself, shown this once. */
    record Issued(String token, String pool, long expiresAtUnix, String nodeId) {
    }

    /** The optional body of {@code POST /v1/node/tokens}. */
    record IssueRequest(String pool, Long ttlSecs, String nodeId) {
        IssueRequest(String pool, Long ttlSecs) {
            this(pool, ttlSecs, null);
        }
    }

    private final StateStore store;
    private final SecureRandom random = new SecureRandom();

    Registrations(StateStore store) {
        this.store = store;
    }

    Issued issue(IssueRequest request) throws IOException {
        String pool = request == null || request.pool() == null ? Nodes.DEFAULT_POOL : Nodes.checkPool(request.pool());
        long ttl = request == null || request.ttlSecs() == null ? DEFAULT_TTL_SECS : request.ttlSecs();
        if (ttl < 1 || ttl > MAX_TTL_SECS) {
            throw ApiException.badRequest("ttl_secs must be between 1 and " + MAX_TTL_SECS + ", got " + ttl);
        }
        String nodeId = request == null || request.nodeId() == null ? null : Nodes.checkId(request.nodeId());
        String token = secret();
        long expires = Instant.now().getEpochSecond() + ttl;
        store.put(FleetCollections.REGISTRATIONS, key(token), new Registration(pool, expires, nodeId), Stored.ABSENT);
        return new Issued(token, pool, expires, nodeId);
    }

    /** The key of a token that is registered and not expired. */
    Optional<String> valid(String token) {
        String key = key(token);
        return store.get(FleetCollections.REGISTRATIONS, key)
                .filter(r -> r.body().expiresAtUnix() > Instant.now().getEpochSecond()).map(Stored::key);
    }

    Optional<Stored<Registration>> get(String key) {
        return store.get(FleetCollections.REGISTRATIONS, key);
    }

    /** 32 random bytes in hex: a registration token or a node's credential. */
    String secret() {
        byte[] b = new byte[32];
        random.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    static String key(String token) {
        return "r" + sha256(token).substring(0, 40);
    }

    static String sha256(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
