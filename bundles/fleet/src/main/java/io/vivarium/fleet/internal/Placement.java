package io.vivarium.fleet.internal;

import io.vivarium.api.SandboxInfo;

/**
 * Where a sandbox the master placed runs, whose it is, and what the node last said of it (shown
 * while the node does not answer).
 */
record Placement(String sandbox, String node, String tenant, SandboxInfo last) {
    Placement withLast(SandboxInfo info) {
        return new Placement(sandbox, node, tenant, info);
    }
}
