package io.vivarium.api;

/**
 * A checkpoint of one instance, as its backend reports it. Since 1.3.
 *
 * @param tag the plain name it was taken under
 * @param createdAtUnix when it was taken, seconds since the epoch
 * @param sizeBytes what it takes on the host (RAM state and disk delta), or null when unknown
 * @param mode how it is stored, as the storage actually did it, e.g. {@code qcow2-internal},
 *        {@code ram-file+reflink}, {@code ram-file+copy}
 */
public record CheckpointInfo(String tag, long createdAtUnix, Long sizeBytes, String mode) {
}
