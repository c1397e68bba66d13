package io.vivarium.fleet.internal;

import io.vivarium.api.SandboxInfo;

/**
 * Where a sandbox the master placed runs, whose it is, and what the node last said of it (shown
 * while the node does not answer).
 *
 * @param recordedAtUnix when the master recorded it, by the master's clock (0 in a record older than
 *        this field): a reconciliation keeps a placement recorded after it asked the node, whatever
 *        the node's clock says
 */
record Placement(String sandbox, String node, String tenant, SandboxInfo last, long recordedAtUnix) {
    Placement withLast(SandboxInfo info) {
        return new Placement(sandbox, node, tenant, info, recordedAtUnix);
    }
}
