package io.vivarium.fleet.internal;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The tickets a node that holds a tag issues, at its master's request, for another node to fetch
 * the tag's files over this node's port: one tenant's one tag, for {@value #LIFETIME_MINUTES}
 * minutes, and nothing else. Held in memory only (a restart ends them; the master asks again) and
 * by the SHA-256 of the token, so that neither a caller's name nor a log ever carries the token.
 */
final class ImageTickets {
    static final int LIFETIME_MINUTES = 15;

    /** What a ticket opens. */
    record Ticket(String tenant, String tag, Instant expires) {
    }

    private final Map<String, Ticket> tickets = new ConcurrentHashMap<>();
    private final SecureRandom random = new SecureRandom();

    /** A new ticket for the tenant's tag: the token, to be sent once to the node that fetches. */
    String issue(String tenant, String tag) {
        Instant now = Instant.now();
        tickets.values().removeIf(t -> t.expires().isBefore(now));
        byte[] bytes = new byte[32];
        random.nextBytes(bytes);
        String token = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
        tickets.put(Registrations.sha256(token), new Ticket(tenant, tag, now.plus(Duration.ofMinutes(LIFETIME_MINUTES))));
        return token;
    }

    /** The handle of a token's live ticket (its SHA-256), if {@code token} is one. */
    Optional<String> handle(String token) {
        String handle = Registrations.sha256(token);
        return ticket(handle).map(t -> handle);
    }

    Optional<Ticket> ticket(String handle) {
        return Optional.ofNullable(tickets.get(handle)).filter(t -> t.expires().isAfter(Instant.now()));
    }
}
