package io.vivarium.fleet.internal;

/**
 * A node as the master keeps it. The secret is the second half of the node's pairing code: the
 * master presents it on every call, so it lives only in the master's store, never in an answer.
 *
 * @param pool the pool the node is in: the one asked for, or {@code <pool>#<fp8>} when its host
 *        fingerprint differs from that pool's
 * @param revoked no longer contacted; adding the node again with its pairing code lifts it
 */
record NodeRecord(String id, String pool, String address, String certificateSha256, String secret,
        HostFingerprint fingerprint, int maxSandboxes, boolean revoked, long addedAtUnix) {

    NodeAddress nodeAddress() {
        return NodeAddress.parse(address);
    }

    PairingCode pairingCode() {
        return new PairingCode(certificateSha256, secret);
    }

    NodeRecord revoke() {
        return new NodeRecord(id, pool, address, certificateSha256, secret, fingerprint, maxSandboxes, true, addedAtUnix);
    }

    NodeRecord withFingerprint(HostFingerprint fp, int max) {
        return new NodeRecord(id, pool, address, certificateSha256, secret, fp, max, revoked, addedAtUnix);
    }
}
