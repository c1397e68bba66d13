package io.vivarium.core.internal;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.ExposedPort;
import io.vivarium.api.PortService;
import io.vivarium.api.Role;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.ports.PortTokens;

/**
 * The exposed ports of every sandbox ({@link PortService}): kept in the sandbox's record (port and
 * the nonce its tokens are bound to), reached at the address its backend gives its network.
 */
final class ExposedPorts {
    private final Sandboxes sandboxes;
    private final LiveInstances live;
    private final PortTokens tokens;

    ExposedPorts(Sandboxes sandboxes, LiveInstances live, PortTokens tokens) {
        this.sandboxes = sandboxes;
        this.live = live;
        this.tokens = tokens;
    }

    ExposedPort expose(Caller caller, String sandboxId, int port, Duration lifetime) {
        PortTokens.checkPort(port);
        PortTokens.checkLifetime(lifetime);
        Sandbox sb = sandboxes.find(caller, sandboxId);
        address(sb, live.of(sb));
        String nonce;
        sb.lifecycle.lock();
        try {
            if (sb.deleted()) {
                throw Sandboxes.notFound(sandboxId);
            }
            Map<Integer, String> ports = sb.record().exposedPorts();
            nonce = ports.get(port);
            if (nonce == null) {
                if (ports.size() >= PortService.MAX_PORTS) {
                    throw ApiException.conflict("sandbox " + sandboxId + " exposes " + PortService.MAX_PORTS
                            + " ports already, the most it may: close one first (DELETE /v1/sandboxes/" + sandboxId + "/ports/{port})");
                }
                nonce = PortTokens.nonce();
                ports.put(port, nonce);
                persist(sb, ports);
            }
        } finally {
            sb.lifecycle.unlock(sandboxes.observer());
        }
        return tokens.grant(sandboxId, port, nonce, lifetime);
    }

    List<ExposedPort> list(Caller caller, String sandboxId) {
        Sandbox sb = sandboxes.find(caller, sandboxId);
        return sb.record().exposedPorts().entrySet().stream()
                .map(e -> tokens.grant(sandboxId, e.getKey(), e.getValue(), PortService.DEFAULT_TOKEN_LIFETIME)).toList();
    }

    ExposedPort get(Caller caller, String sandboxId, int port) {
        PortTokens.checkPort(port);
        String nonce = sandboxes.find(caller, sandboxId).record().exposedPorts().get(port);
        if (nonce == null) {
            throw PortTokens.notExposed(sandboxId, port);
        }
        return tokens.grant(sandboxId, port, nonce, PortService.DEFAULT_TOKEN_LIFETIME);
    }

    void close(Caller caller, String sandboxId, int port) {
        PortTokens.checkPort(port);
        Sandbox sb = sandboxes.find(caller, sandboxId);
        sb.lifecycle.lock();
        try {
            Map<Integer, String> ports = sb.record().exposedPorts();
            if (sb.deleted() || ports.remove(port) == null) {
                throw PortTokens.notExposed(sandboxId, port);
            }
            persist(sb, ports);
        } finally {
            sb.lifecycle.unlock(sandboxes.observer());
        }
    }

    URI upstream(Caller caller, String sandboxId, int port) {
        Sandbox sb = exposing(caller, sandboxId, port);
        return URI.create("http://" + address(sb, live.of(sb)) + ":" + port + "/");
    }

    /** {@link #upstream}, the sandbox held busy (never demoted) until the forwarded exchange's {@code done} runs. */
    PortService.Forwarding forward(Caller caller, String sandboxId, int port) {
        Sandbox sb = exposing(caller, sandboxId, port);
        // held before the instance is asked for, so no demotion comes in between
        Runnable done = live.hold(sb);
        try {
            return new PortService.Forwarding(URI.create("http://" + address(sb, live.of(sb)) + ":" + port + "/"), done);
        } catch (RuntimeException e) {
            done.run();
            throw e;
        }
    }

    /** The caller's sandbox that exposes {@code port}: 404 for another's, or a port it does not expose. */
    private Sandbox exposing(Caller caller, String sandboxId, int port) {
        PortTokens.checkPort(port);
        Sandbox sb = sandboxes.find(caller, sandboxId);
        if (!sb.record().exposedPorts().containsKey(port)) {
            throw PortTokens.notExposed(sandboxId, port);
        }
        return sb;
    }

    Optional<Caller> signedCaller(String token, String sandboxId, int port) {
        return sandboxes.any(sandboxId).filter(sb -> {
            String nonce = sb.record().exposedPorts().get(port);
            return nonce != null && tokens.valid(token, sandboxId, port, nonce, Instant.now());
        }).map(sb -> new Caller(sb.record().tenant(), Role.USER));
    }

    private static String address(Sandbox sb, SandboxInstance instance) {
        return instance.networkAddress().orElseThrow(() -> ApiException.conflict("sandbox " + sb.record().id()
                + " has no network address to reach a port at: create it with \"network\": {\"mode\": \"egress\"} (an empty"
                + " allow list gives it an address and no way out)" + (sb.record().network() != null && sb.record().network().egress()
                        ? "; its backend " + sb.record().backend() + " gives it none" : "")));
    }

    private void persist(Sandbox sb, Map<Integer, String> ports) {
        try {
            sandboxes.persist(sb, sb.record().withPorts(ports));
        } catch (IOException e) {
            throw ApiException.internal("cannot record the ports of sandbox " + sb.record().id() + ": " + e.getMessage(), e);
        } catch (io.vivarium.api.state.StaleRevisionException e) {
            throw ApiException.conflict("sandbox " + sb.record().id() + " changed meanwhile; try again");
        }
    }
}
