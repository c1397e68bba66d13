package io.vivarium.fleet.internal;

/**
 * A node's answer to {@code GET /v1/node/hello}, which only the master's credential may ask:
 * who the node is, its host's fingerprint and its load.
 *
 * @param nodeId the node's {@code --node-id}, else its host name
 * @param version the engine's version
 * @param maxSandboxes how many sandboxes the node takes at most
 * @param sandboxes how many it runs now
 * @param memAvailableMib the host's available memory
 */
record NodeHello(String nodeId, String version, HostFingerprint fingerprint, int maxSandboxes, int sandboxes,
        long memAvailableMib) {
}
