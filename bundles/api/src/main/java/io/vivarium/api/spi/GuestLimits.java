package io.vivarium.api.spi;

/**
 * What a guest channel can carry at most, so that core refuses a request it could not honour
 * instead of truncating it silently. Since 1.2.
 *
 * @param maxOutputBytes the largest output per stream an exec can return (the stock QEMU guest
 *        agent buffers at most 16 MiB of a guest-exec's output)
 * @param maxFileBytes the largest file {@link GuestChannel#readFile}/{@link GuestChannel#writeFile}
 *        move in one call
 */
public record GuestLimits(long maxOutputBytes, long maxFileBytes) {

    /**
     * What core assumes of a channel that does not say, and the most an exec request may ask for:
     * 16 MiB of output, files of {@link io.vivarium.api.SandboxService#MAX_FILE_BYTES}.
     */
    public static final GuestLimits DEFAULT = new GuestLimits(16L << 20, io.vivarium.api.SandboxService.MAX_FILE_BYTES);

    public GuestLimits {
        if (maxOutputBytes < 1 || maxFileBytes < 0) {
            throw new IllegalArgumentException("limits must be positive: " + maxOutputBytes + ", " + maxFileBytes);
        }
    }
}
