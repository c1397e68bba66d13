package io.vivarium.client;

import java.util.OptionalInt;

/** An error answer of the daemon: its HTTP status and its message ({@code {"error": "..."}}), or a call that got no answer (status 0). */
public class VivariumException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final Integer retryAfterSeconds;

    public VivariumException(int status, String message, Integer retryAfterSeconds, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /** The HTTP status (400, 404, 409, 503...), or 0 when the daemon could not be reached or stopped answering. */
    public int status() {
        return status;
    }

    /** The daemon's {@code Retry-After}, for a 503 it expects to end. */
    public OptionalInt retryAfterSeconds() {
        return retryAfterSeconds == null ? OptionalInt.empty() : OptionalInt.of(retryAfterSeconds);
    }
}
