package io.vivarium.api.spi;

/**
 * A node of the fleet as the master last saw it, for {@link RuntimeObserver#fleetNodes}. Since 2.2.
 *
 * @param node the node's id
 * @param pool its pool ({@code <pool>#<fp8>} for a node whose host differs from its pool's)
 * @param state {@code connected}, {@code disconnected} or {@code revoked}
 * @param sandboxes how many sandboxes it ran at its last hello, or -1 if it has not answered one
 * @param maxSandboxes how many it takes at most
 * @param memAvailableBytes its host's available memory at its last hello, or -1
 */
public record FleetNode(String node, String pool, String state, int sandboxes, int maxSandboxes, long memAvailableBytes) {
}
