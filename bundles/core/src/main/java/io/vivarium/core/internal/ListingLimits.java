package io.vivarium.core.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import io.vivarium.api.ApiException;

/** The per-request bounds of a file listing, with the running totals checked against them. */
final class ListingLimits {
    static final int MAX_FILES = 200_000;
    static final long MAX_BYTES = 64L << 20;
    static final Duration TIME_LIMIT = Duration.ofSeconds(300);

    private final int maxFiles;
    private final long maxBytes;
    private final long deadline;
    private int files;
    private long bytes;

    ListingLimits(int maxFiles, long maxBytes, Duration timeLimit) {
        this.maxFiles = maxFiles;
        this.maxBytes = maxBytes;
        this.deadline = System.nanoTime() + timeLimit.toNanos();
    }

    static ListingLimits standard() {
        return new ListingLimits(MAX_FILES, MAX_BYTES, TIME_LIMIT);
    }

    synchronized void add(String path, String fingerprint) {
        checkCount(++files);
        bytes += path.getBytes(StandardCharsets.UTF_8).length + fingerprint.length() + 2;
        if (bytes > maxBytes) {
            throw ApiException.badRequest("the listing exceeds " + (maxBytes >> 20) + " MiB; narrow the paths");
        }
    }

    /** For walks that collect before they fingerprint: fail as soon as there are too many files. */
    void checkCount(int collected) {
        if (collected > maxFiles) {
            throw ApiException.badRequest("more than " + maxFiles + " files under the paths; narrow the paths");
        }
    }

    void checkTime() {
        if (System.nanoTime() > deadline) {
            throw ApiException.badRequest("listing the files took longer than " + TIME_LIMIT.toSeconds()
                    + " s; narrow the paths");
        }
    }

    long remainingMillis() {
        return Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
    }
}
