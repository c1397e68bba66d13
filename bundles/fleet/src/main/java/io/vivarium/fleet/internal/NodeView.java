package io.vivarium.fleet.internal;

/**
 * A node as {@code GET /v1/nodes} shows it (and, without the live fields, as {@code POST /v1/nodes}
 * answers): never its secret.
 *
 * @param mode {@code listen} (the master dials it) or {@code pull} (it dials in and long-polls)
 * @param state {@code connected}, {@code disconnected} or {@code revoked}
 * @param reason why it is not connected, if it is not
 */
record NodeView(String id, String mode, String pool, String address, String fingerprint, HostFingerprint host, int maxSandboxes,
        String state, Integer sandboxes, Long memAvailableMib, String reason, Long lastSeenUnix) {
}
