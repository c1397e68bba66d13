package io.vivarium.fleet.internal;

/** The body of {@code POST /v1/nodes}: a listening node's address and pairing code; id and pool are optional. */
record AddNodeRequest(String address, String pairingCode, String nodeId, String pool) {
}
