package io.vivarium.fleet.internal;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Relay;
import io.vivarium.api.http.NodeHeaders;

/**
 * How the master's services reach a placed sandbox: found by its placement, refused as 404 to
 * another tenant (as on one host), called on its node with the caller's tenant and role; a node
 * that does not answer is a 503 with {@code Retry-After}.
 */
final class Forwarding {
    private final Nodes nodes;
    private final Placements placements;

    Forwarding(Nodes nodes, Placements placements) {
        this.nodes = nodes;
        this.placements = placements;
    }

    /** When a caller asks again after a node did not answer. */
    static final int RETRY_AFTER_SECS = 2;

    /** The routes of one sandbox, on the master and its nodes alike. */
    static final String SANDBOXES = "/v1/sandboxes";
    /** The routes of one sandbox that is a machine ({@code VmService}). */
    static final String VMS = "/v1/vms";

    /** A placed sandbox of the caller's tenant, the link to its node and the routes it is reached by there. */
    record Remote(Placement placement, NodeLink link, String collection) {
        String path(String suffix) {
            return collection + "/" + segment(placement.sandbox()) + suffix;
        }

        String node() {
            return placement.node();
        }
    }

    /** The caller's placed sandbox {@code id}, or null for a sandbox of this daemon. */
    Remote sandbox(Caller caller, String id) {
        return placed(caller, id, SANDBOXES);
    }

    /** The caller's placed sandbox {@code id}, reached by the VM routes of its node, or null for a sandbox of this daemon. */
    Remote vm(Caller caller, String id) {
        return placed(caller, id, VMS);
    }

    private Remote placed(Caller caller, String id, String collection) {
        Placement p = placements.of(id).orElse(null);
        if (p == null) {
            return null;
        }
        if (!p.tenant().equals(caller.tenant())) {
            throw ApiException.notFound("no sandbox " + id);
        }
        return new Remote(p, nodes.link(p.node()), collection);
    }

    /**
     * The node of a placed sandbox as the routes that only reach into it are passed on there, with
     * the node's secret and the caller's tenant and role; empty for a node that dials in (no address
     * to pass a request to: its calls go through its poll).
     */
    Optional<Relay> relay(Remote r, Caller caller) {
        return r.link().direct().map(node -> new Relay(URI.create(node.origin()), node.tls(), credentials(r.node(), node, caller),
                NodeLink.CALL_TIMEOUT, "node " + r.node() + ", which runs sandbox " + r.placement().sandbox()
                        + ", cannot be reached; retry once it is back", RETRY_AFTER_SECS,
                exchange -> node.cuts().onCut(why -> exchange.accept(lostMessage(r.node(), why)))));
    }

    /** What a request passed on to {@code node} carries: its pairing secret as the bearer token, the caller's tenant and role. */
    static Map<String, String> credentials(String nodeId, NodeLink.Direct node, Caller caller) {
        NodeLink.checkTenant(caller);
        String secret;
        try {
            secret = node.secret().get();
        } catch (IOException e) {
            throw ApiException.unavailable("cannot read node " + nodeId + "'s pairing secret: " + e.getMessage(), RETRY_AFTER_SECS);
        }
        return Map.of("Authorization", "Bearer " + secret, NodeHeaders.TENANT, caller.tenant(),
                NodeHeaders.ROLE, caller.role().name().toLowerCase(Locale.ROOT));
    }

    <T> T call(Remote r, String method, String suffix, Caller caller, Object body, Class<T> type) {
        return call(r.node(), method, r.path(suffix), caller, body, type);
    }

    /** As {@link #call(Remote, String, String, Caller, Object, Class)}, for a call that may take {@code timeout} (a long poll). */
    <T> T call(Remote r, String method, String suffix, Caller caller, Object body, Class<T> type, java.time.Duration timeout) {
        return call(r.node(), method, r.path(suffix), caller, body, type, timeout);
    }

    <T> T call(String node, String method, String path, Caller caller, Object body, Class<T> type) {
        return call(node, method, path, caller, body, type, NodeLink.CALL_TIMEOUT);
    }

    /**
     * The parts of a master-wide list that the connected ones of {@code candidates} give, asked side
     * by side so that a list waits for its slowest node, not for the sum of them: a node's part, or
     * null for a node that is not connected or does not give it within {@link NodeLink#LIST_TIMEOUT}.
     * A 400 (the caller's own fault, the same on every node) is thrown.
     */
    <T> Map<String, T> listParts(Collection<String> candidates, String path, Caller caller, Class<T> type) {
        Map<String, SideBySide.Outcome<T>> asked = SideBySide.run(candidates.stream().filter(nodes::connected).toList(),
                node -> listPart(node, path, caller, type));
        Map<String, T> parts = new LinkedHashMap<>();
        for (String node : candidates) {
            SideBySide.Outcome<T> part = asked.get(node);
            if (part != null && part.failure() != null) {
                throw part.failure();
            }
            parts.put(node, part == null ? null : part.value());
        }
        return parts;
    }

    private <T> T listPart(String node, String path, Caller caller, Class<T> type) {
        try {
            return call(node, "GET", path, caller, null, type, NodeLink.LIST_TIMEOUT);
        } catch (ApiException e) {
            if (e.status() == 400) {
                throw e; // the caller's own fault, the same on every node
            }
            return null;
        }
    }

    private <T> T call(String node, String method, String path, Caller caller, Object body, Class<T> type, java.time.Duration timeout) {
        try {
            return nodes.link(node).call(method, path, caller, body, type, timeout);
        } catch (NodeLink.NodeFailure e) {
            throw lost(node, e);
        }
    }

    byte[] bytes(Remote r, String method, String suffix, Caller caller, byte[] body) {
        try {
            return r.link().bytes(method, r.path(suffix), caller, body);
        } catch (NodeLink.NodeFailure e) {
            throw lost(r.node(), e);
        }
    }

    static String segment(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private static ApiException lost(String node, NodeLink.NodeFailure e) {
        return new ApiException(503, lostMessage(node, e.getMessage()), RETRY_AFTER_SECS, e);
    }

    private static String lostMessage(String node, String why) {
        return "node " + node + " did not answer: " + why + "; retry once it is back";
    }
}
