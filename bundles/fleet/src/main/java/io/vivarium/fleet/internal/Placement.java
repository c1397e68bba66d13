package io.vivarium.fleet.internal;

import java.util.Map;
import java.util.TreeMap;

import io.vivarium.api.SandboxInfo;

/**
 * Where a sandbox the master placed runs, whose it is, and what the node last said of it (shown
 * while the node does not answer).
 *
 * @param recordedAtUnix when the master recorded it, by the master's clock (0 in a record older than
 *        this field): a reconciliation keeps a placement recorded after it asked the node, whatever
 *        the node's clock says
 * @param ports the sandbox's ports exposed through the master, each with the nonce of the master's
 *        signed tokens for it ({@link FleetPorts}); none in a record older than this field
 */
record Placement(String sandbox, String node, String tenant, SandboxInfo last, long recordedAtUnix, Map<Integer, String> ports) {
    Placement {
        ports = ports == null ? Map.of() : Map.copyOf(ports);
    }

    Placement withLast(SandboxInfo info) {
        return new Placement(sandbox, node, tenant, info, recordedAtUnix, ports);
    }

    Placement withPort(int port, String nonce) {
        Map<Integer, String> more = new TreeMap<>(ports);
        more.put(port, nonce);
        return new Placement(sandbox, node, tenant, last, recordedAtUnix, more);
    }

    Placement withoutPort(int port) {
        Map<Integer, String> fewer = new TreeMap<>(ports);
        fewer.remove(port);
        return new Placement(sandbox, node, tenant, last, recordedAtUnix, fewer);
    }
}
