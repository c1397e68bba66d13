package io.vivarium.api.spi;

/**
 * Whether a backend can create instances on this host right now. An unavailable backend stays
 * registered and says why (a missing binary, no KVM), rather than failing activation.
 *
 * @param available true when instances can be created
 * @param reason what is missing and how to get it, when unavailable; when available, what works
 *        less safely than it should on this host (null when nothing)
 */
public record Availability(boolean available, String reason) {
    public static Availability yes() {
        return new Availability(true, null);
    }

    public static Availability no(String reason) {
        return new Availability(false, reason);
    }
}
