package io.vivarium.api.spi;

/**
 * A snapshot tag a daemon holds, of any tenant, as {@link SnapshotCopies#held} lists them for a
 * master that reconciles its records with its nodes. Since 2.3.
 *
 * @param tenant the tenant
 * @param tag the tag
 * @param copy whether it is a copy received from the node that holds the tag
 * @param status {@code writing}, {@code ready} or {@code failed}
 */
public record HeldImage(String tenant, String tag, boolean copy, String status) {
}
