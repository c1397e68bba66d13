package io.vivarium.fleet.internal;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.ExposedPort;
import io.vivarium.api.PortService;
import io.vivarium.api.Role;
import io.vivarium.common.ports.PortTokens;
import io.vivarium.fleet.internal.Forwarding.Remote;

/**
 * A master's {@link PortService}: a port of a sandbox placed on a node is exposed on that node (which
 * checks that the sandbox runs, has an address and exposes no more than it may) and reached through
 * the master, which passes each request and WebSocket on to the port's route on the node over the
 * node's pinned HTTPS with its pairing secret and the caller's tenant and role, as every other
 * forwarded route. The master signs the tokens of such ports itself, with the daemon's port token
 * key and a nonce per port kept on the placement, so a signed URL is checked at the master and a
 * closed port refuses it there. A node that dials in has no address to pass requests to: its
 * sandboxes' ports are a 409. The master's own sandboxes stay with core's service.
 */
final class FleetPorts implements PortService {
    /** Body of the node's {@code POST /v1/sandboxes/{id}/ports}. */
    record ExposeBody(int port) {
    }

    /** An exposed port as the node lists it (its own URLs and token are not the caller's: the master signs its own). */
    record NodePort(int port) {
    }

    private final PortService local;
    private final io.vivarium.fleet.internal.Forwarding forwarding;
    private final Placements placements;
    private final PortTokens tokens;

    FleetPorts(PortService local, io.vivarium.fleet.internal.Forwarding forwarding, Placements placements, PortTokens tokens) {
        this.local = local;
        this.forwarding = forwarding;
        this.placements = placements;
        this.tokens = tokens;
    }

    @Override
    public ExposedPort expose(Caller caller, String sandboxId, int port, Duration tokenLifetime) {
        Remote r = forwarding.sandbox(caller, sandboxId);
        if (r == null) {
            return local.expose(caller, sandboxId, port, tokenLifetime);
        }
        PortTokens.checkPort(port);
        PortTokens.checkLifetime(tokenLifetime);
        direct(r);
        forwarding.call(r, "POST", "/ports", caller, new ExposeBody(port), null);
        return tokens.grant(sandboxId, port, nonce(sandboxId, port), tokenLifetime);
    }

    @Override
    public List<ExposedPort> list(Caller caller, String sandboxId) {
        Remote r = forwarding.sandbox(caller, sandboxId);
        if (r == null) {
            return local.list(caller, sandboxId);
        }
        List<ExposedPort> granted = new ArrayList<>();
        for (NodePort p : forwarding.call(r, "GET", "/ports", caller, null, NodePort[].class)) {
            granted.add(tokens.grant(sandboxId, p.port(), nonce(sandboxId, p.port()), DEFAULT_TOKEN_LIFETIME));
        }
        return granted;
    }

    @Override
    public ExposedPort get(Caller caller, String sandboxId, int port) {
        Remote r = forwarding.sandbox(caller, sandboxId);
        if (r == null) {
            return local.get(caller, sandboxId, port);
        }
        PortTokens.checkPort(port);
        forwarding.call(r, "GET", "/ports/" + port, caller, null, NodePort.class);
        return tokens.grant(sandboxId, port, nonce(sandboxId, port), DEFAULT_TOKEN_LIFETIME);
    }

    @Override
    public void close(Caller caller, String sandboxId, int port) {
        Remote r = forwarding.sandbox(caller, sandboxId);
        if (r == null) {
            local.close(caller, sandboxId, port);
            return;
        }
        PortTokens.checkPort(port);
        try {
            // the master's tokens first: once the node has closed the port, none may still reach it
            placements.closePort(sandboxId, port);
        } catch (IOException e) {
            throw ApiException.unavailable("cannot record that port " + port + " of sandbox " + sandboxId
                    + " is closed: " + e.getMessage() + "; try again", 1);
        }
        forwarding.call(r, "DELETE", "/ports/" + port, caller, null, null);
    }

    @Deprecated(since = "2.8")
    @Override
    public URI upstream(Caller caller, String sandboxId, int port) {
        if (forwarding.sandbox(caller, sandboxId) == null) {
            return local.upstream(caller, sandboxId, port);
        }
        throw ApiException.conflict("port " + port + " of sandbox " + sandboxId + " is reached through its node: forward to it");
    }

    @Override
    public PortService.Forwarding forward(Caller caller, String sandboxId, int port) {
        Remote r = forwarding.sandbox(caller, sandboxId);
        if (r == null) {
            return local.forward(caller, sandboxId, port);
        }
        PortTokens.checkPort(port);
        NodeLink.Direct node = direct(r);
        // the node answers 404 itself for a port it does not expose, and 502 for one nothing listens on
        return new PortService.Forwarding(URI.create(node.origin() + r.path("/ports/" + port + "/")), () -> { }, node.tls(),
                io.vivarium.fleet.internal.Forwarding.credentials(r.node(), node, caller),
                "node " + r.node() + ", which runs sandbox " + sandboxId + ", cannot be reached; retry once it is back");
    }

    @Override
    public Optional<Caller> signedCaller(String token, String sandboxId, int port) {
        Optional<Placement> placed = placements.of(sandboxId);
        if (placed.isEmpty()) {
            return local.signedCaller(token, sandboxId, port);
        }
        String nonce = placed.get().ports().get(port);
        return nonce != null && tokens.valid(token, sandboxId, port, nonce, Instant.now())
                ? Optional.of(new Caller(placed.get().tenant(), Role.USER)) : Optional.empty();
    }

    private String nonce(String sandboxId, int port) {
        try {
            return placements.portNonce(sandboxId, port).orElseThrow(() -> ApiException.notFound("no sandbox " + sandboxId));
        } catch (IOException e) {
            throw ApiException.unavailable("cannot record port " + port + " of sandbox " + sandboxId + ": " + e.getMessage()
                    + "; try again", 1);
        }
    }

    private static NodeLink.Direct direct(Remote r) {
        return r.link().direct().orElseThrow(() -> ApiException.conflict("sandbox " + r.placement().sandbox() + " runs on node "
                + r.node() + ", which dials in to the master and has no address the master can pass requests to: its ports "
                + "are reached on the node itself, or add it by address and pairing code (POST /v1/nodes)"));
    }
}
