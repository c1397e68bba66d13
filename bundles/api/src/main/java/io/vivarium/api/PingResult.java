package io.vivarium.api;

/**
 * Answer of {@code POST /v1/sandboxes/{id}/ping}.
 *
 * @param pong always true when the sandbox answered
 * @param pid pid of the sandbox's init as seen inside it
 * @param latencyMs round-trip time in milliseconds
 * @param pythonVersion the version of the sandbox's warm interpreter (e.g. {@code 3.11.2}) once one
 *        has started there (the first eval starts it), or null before, or when the sandbox has none
 *        (no Python, or an agent without eval); since 1.3
 */
public record PingResult(boolean pong, long pid, double latencyMs, String pythonVersion) {

    /** The record of API 1.2. */
    public PingResult(boolean pong, long pid, double latencyMs) {
        this(pong, pid, latencyMs, null);
    }
}
