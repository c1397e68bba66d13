package io.vivarium.fleet.internal;

import java.util.List;

/**
 * The bodies of pull mode, where a node dials its master: it registers with a registration token
 * ({@code POST /v1/node/register}), then long-polls for the calls the master would otherwise have
 * made to it ({@code POST /v1/node/poll}) and posts their answers ({@code POST /v1/node/results}),
 * authenticated by the credential registration gave it. The calls are the same requests of the
 * node's own API as in listen mode, so both modes end in the same state.
 */
final class PullWire {
    private PullWire() {
    }

    /** {@code POST /v1/node/register}: who the node is; its bearer token is the registration token. */
    record RegisterRequest(String nodeId, NodeHello hello) {
    }

    /** The answer: the node's id and pool, and the credential it polls with from then on (shown once). */
    record Registered(String id, String pool, String credential) {
    }

    /**
     * {@code POST /v1/node/poll}: every poll carries a full hello, and the ids of the calls the node
     * is still making (taken by an earlier poll, not yet answered): a call the master handed out
     * that is in neither list nor answered never reached the node, and fails at once.
     */
    record PollRequest(NodeHello hello, List<String> holding) {
        PollRequest(NodeHello hello) {
            this(hello, null);
        }
    }

    /** The calls queued for the node; empty when the hold ended without one. */
    record PollAnswer(List<Call> calls) {
    }

    /**
     * One request of the node's own API, to make as the master's credential on the node would
     * (bearer: its pairing secret; {@code Vivarium-Tenant}, {@code Vivarium-Role}).
     *
     * @param body base64, or null for none
     */
    record Call(String id, String method, String path, String tenant, String role, String contentType, String body) {
    }

    /** {@code POST /v1/node/results}: the answers to calls, in any order. */
    record Results(List<Result> results) {
    }

    /**
     * @param body base64 of the answer's body
     * @param retryAfter the answer's {@code Retry-After}, if any
     */
    record Result(String id, int status, String retryAfter, String body) {
    }
}
