package io.vivarium.core.internal;

import io.vivarium.api.ApiException;

/** A create or fork that names a fleet node reaches core only on a daemon that drives no nodes: a 400 saying so. */
final class NodeChoice {
    private NodeChoice() {
    }

    static void refuse(String nodeId) {
        if (nodeId != null) {
            throw ApiException.badRequest("node_id names a node of a fleet, and this daemon drives no nodes: leave it out, "
                    + "or send the request to the master that drives node " + nodeId + " (docs/fleet.md)");
        }
    }
}
