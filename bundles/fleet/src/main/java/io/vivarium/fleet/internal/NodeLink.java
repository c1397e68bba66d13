package io.vivarium.fleet.internal;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

import javax.net.ssl.SSLContext;


import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Relay;
import io.vivarium.api.http.NodeHeaders;

/**
 * The master's link to one node: calls of the node's own {@code /v1} API with the tenant and role
 * the master acts for (the master has already checked both), over a {@link Transport}: dialled
 * ({@link DialTransport}) or polled by the node ({@link PolledTransport}). The node's own 4xx and
 * 5xx reach the caller as they are; not reaching the node is a {@link NodeFailure}.
 */
final class NodeLink {
    /** Why a node could not be driven: unreachable, another certificate, or a refused secret. */
    static final class NodeFailure extends IOException {
        private static final long serialVersionUID = 1L;

        NodeFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Whom the master acts as for its own calls (hello, a node's census): daemon-wide, no tenant's. */
    static final Caller MASTER = new Caller("default", io.vivarium.api.Role.OPERATOR);
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(3);
    static final Duration HELLO_TIMEOUT = Duration.ofSeconds(3);

    /**
     * How long a forwarded call may take at most: an exec or a dry-run runs as long as it asked to
     * (an hour at most), and its answer comes after.
     */
    static final Duration CALL_TIMEOUT = Duration.ofMinutes(65);
    /**
     * How long a node may take to answer its part of a master-wide list (sandboxes, backends,
     * snapshots): one node that hangs must not hold every tenant's list.
     */
    static final Duration LIST_TIMEOUT = Duration.ofSeconds(5);

    /** How calls reach a node: dialled over HTTPS (listen mode) or handed to its long poll (pull mode). */
    interface Transport {
        /** One request of the node's own API; a node that cannot be reached or refuses the master is a {@link NodeFailure}. */
        Answer send(String method, String path, Caller caller, byte[] body, String contentType, Duration timeout)
                throws NodeFailure;

        /** Ends the calls under way, each with a {@link NodeFailure} saying why; a transport that ends them itself does nothing. */
        default void cut(String why) {
        }

        /** How the node's API is dialled by other means than {@link #send} (a request streamed through); empty when it dials in. */
        default Optional<Direct> direct() {
            return Optional.empty();
        }
    }

    /**
     * A listening node's API as any HTTPS client reaches it: its origin ({@code https://HOST:PORT}),
     * the TLS context that trusts only its certificate, its pairing secret, the bearer token of
     * calls made for a caller with {@link NodeHeaders}, and its {@link Transport#cut}s, which such
     * a client's exchanges under way end with.
     */
    record Direct(String origin, SSLContext tls, DialTransport.Secret secret, Relay.Cuts cuts) {
    }

    /** A node's answer: its status, its body, its Retry-After if any. */
    record Answer(int status, byte[] body, String retryAfter) {
    }

    private final String where;
    private final Transport transport;

    /** @param where the node as messages name it: its address, or its id for a node that dials in */
    NodeLink(String where, Transport transport) {
        this.where = where;
        this.transport = transport;
    }

    /** A link the master dials: the node's certificate pinned by its pairing code, its secret presented. */
    static NodeLink dialled(NodeAddress address, PairingCode code) {
        return new NodeLink("the node at " + address, DialTransport.toNode(address, code));
    }

    /** 400 for a caller whose tenant a node cannot be told (in {@link NodeHeaders#TENANT}). */
    static void checkTenant(Caller caller) {
        if (!NodeHeaders.TENANT_NAME.matcher(caller.tenant()).matches()) {
            throw ApiException.badRequest("tenant '" + caller.tenant() + "' cannot be driven on a fleet node: a node takes tenant "
                    + "names of letters, digits, '.', '_' and '-' (up to 64, starting with a letter or digit); rename it in the "
                    + "master's token file");
        }
    }

    /** {@link Transport#direct()}. */
    Optional<Direct> direct() {
        return transport.direct();
    }

    /** Ends the calls to the node under way: it was disconnected. */
    void cut(String why) {
        transport.cut(why);
    }

    /** The node's hello: who it is, what its host is, how loaded it is. Any failure is a {@link NodeFailure}. */
    NodeHello hello() throws NodeFailure {
        Answer r = transport.send("GET", "/v1/node/hello", MASTER, null, null, HELLO_TIMEOUT);
        if (r.status() != 200) {
            throw new NodeFailure(where + " answered its hello with " + r.status() + ": "
                    + FleetJson.error(r.body()), null);
        }
        try {
            return FleetJson.read(r.body(), NodeHello.class);
        } catch (IOException e) {
            throw new NodeFailure(where + " answered its hello with what is not a hello: " + e.getMessage(), e);
        }
    }

    /**
     * Calls a route of the node's API for {@code caller}; a JSON answer is read as {@code type}
     * ({@code null} for none). The node's own 4xx and 5xx reach the caller as they are.
     */
    <T> T call(String method, String path, Caller caller, Object body, Class<T> type) throws NodeFailure {
        return call(method, path, caller, body, type, CALL_TIMEOUT);
    }

    <T> T call(String method, String path, Caller caller, Object body, Class<T> type, Duration timeout) throws NodeFailure {
        checkTenant(caller);
        Answer r = transport.send(method, path, caller, body == null ? null : FleetJson.write(body), "application/json", timeout);
        failOnError(r);
        if (type == null || r.status() == 204) {
            return null;
        }
        try {
            return FleetJson.read(r.body(), type);
        } catch (IOException e) {
            throw new NodeFailure(where + " answered " + method + " " + path + " with what the master cannot read: "
                    + e.getMessage(), e);
        }
    }

    /** Like {@link #call} for a body of bytes either way (files). */
    byte[] bytes(String method, String path, Caller caller, byte[] body) throws NodeFailure {
        Answer r = transport.send(method, path, caller, body, "application/octet-stream", CALL_TIMEOUT);
        failOnError(r);
        return r.body();
    }

    static String query(String name, String value) {
        return name + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8);
    }

    private static void failOnError(Answer r) {
        if (r.status() >= 400) {
            throw new ApiException(r.status(), FleetJson.error(r.body()), seconds(r.retryAfter()), null);
        }
    }

    private static Integer seconds(String header) {
        try {
            return header == null ? null : Integer.valueOf(header.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

}
