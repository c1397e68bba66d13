package io.vivarium.api;

/**
 * Answer of {@code POST /v1/sandboxes/{id}/ping}.
 *
 * @param pong always true when the sandbox answered
 * @param pid pid of the sandbox's init as seen inside it
 * @param latencyMs round-trip time in milliseconds
 */
public record PingResult(boolean pong, long pid, double latencyMs) {
}
