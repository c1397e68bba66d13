package io.vivarium.client;

import java.util.List;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * A master's nodes (docs/fleet.md; the {@code operator} role). The daemons' own protocol between
 * master and nodes ({@code /v1/node/hello}, {@code poll}, {@code images} ...) is not a client's.
 */
public final class Fleet {
    private final Http http;

    Fleet(Http http) {
        this.http = http;
    }

    /** A node as the master lists it. */
    public record Node(String id, String mode, String pool, String address, String fingerprint, JsonNode host, int maxSandboxes,
            String state, Integer sandboxes, Long memAvailableMib, String reason, Long lastSeenUnix) {
    }

    /** What adds a listening node: its address and pairing code ({@code pki/node/pairing-code} on the node). */
    public record AddNode(String address, String pairingCode, String nodeId, String pool) {
    }

    /** A token a node that dials in registers with. */
    public record RegistrationToken(String token, String pool, long expiresAtUnix, String nodeId) {
    }

    private record TokenRequest(String pool, Integer ttlSecs, String nodeId) {
    }

    @Route("POST /v1/nodes")
    public Node add(AddNode request) {
        return http.json("POST", "/v1/nodes", request, Node.class);
    }

    @Route("GET /v1/nodes")
    public List<Node> list() {
        return http.json("GET", "/v1/nodes", null, new TypeReference<List<Node>>() { });
    }

    /** Stops trusting the node {@code id} until it is added again with its pairing code. */
    @Route("POST /v1/node/revoke/{id}")
    public Node revoke(String id) {
        return http.json("POST", "/v1/node/revoke/" + Http.segment(id), null, Node.class);
    }

    /** A registration token for a node that dials in ({@code serve --node --master-url}); nulls take the master's defaults. */
    @Route("POST /v1/node/tokens")
    public RegistrationToken issueToken(String pool, Integer ttlSecs, String nodeId) {
        return http.json("POST", "/v1/node/tokens", new TokenRequest(pool, ttlSecs, nodeId), RegistrationToken.class);
    }
}
