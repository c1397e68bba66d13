package io.vivarium.api;

/**
 * A failure that the caller should see as an HTTP status and a message telling them what to fix.
 * Anything else that escapes to the edge is a bug and is reported as a 500.
 */
public class ApiException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final Integer retryAfterSeconds;

    public ApiException(int status, String message) {
        this(status, message, null, null);
    }

    public ApiException(int status, String message, Integer retryAfterSeconds, Throwable cause) {
        super(message, cause);
        if (status < 400 || status > 599) {
            throw new IllegalArgumentException("not an error status: " + status);
        }
        this.status = status;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    public int status() {
        return status;
    }

    /** Seconds a client should wait before retrying (sent as {@code Retry-After}), or null. */
    public Integer retryAfterSeconds() {
        return retryAfterSeconds;
    }

    public static ApiException badRequest(String message) {
        return new ApiException(400, message);
    }

    public static ApiException forbidden(String message) {
        return new ApiException(403, message);
    }

    public static ApiException notFound(String message) {
        return new ApiException(404, message);
    }

    public static ApiException conflict(String message) {
        return new ApiException(409, message);
    }

    public static ApiException notImplemented(String message) {
        return new ApiException(501, message);
    }

    public static ApiException unavailable(String message, int retryAfterSeconds) {
        return new ApiException(503, message, retryAfterSeconds, null);
    }

    /**
     * The host has no room for this now (memory, vCPUs, instance slots) but will when others end:
     * 503 with {@code Retry-After}. Distinct from a backend that cannot work on this host at all,
     * which is a 503 without {@code Retry-After}. Since 1.3.
     */
    public static ApiException noCapacity(String message, int retryAfterSeconds) {
        if (retryAfterSeconds < 1) {
            throw new IllegalArgumentException("retryAfterSeconds must be positive: " + retryAfterSeconds);
        }
        return new ApiException(503, message, retryAfterSeconds, null);
    }

    public static ApiException internal(String message, Throwable cause) {
        return new ApiException(500, message, null, cause);
    }
}
