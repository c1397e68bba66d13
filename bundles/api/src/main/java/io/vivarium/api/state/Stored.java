package io.vivarium.api.state;

/**
 * A record as stored: its body, its revision (1 when first written, one more at each write) and
 * the node it lives on.
 */
public record Stored<T>(String key, T body, long revision, String node) {
    /** The revision a put of a record that does not exist yet expects. */
    public static final long ABSENT = 0;
}
