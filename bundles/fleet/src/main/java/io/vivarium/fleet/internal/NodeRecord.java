package io.vivarium.fleet.internal;

import java.io.IOException;

/**
 * A node as the master keeps it. A node the master dials (listen mode) has an address and the
 * pairing code's halves, the secret among them, sealed ({@link SecretBox}): the master presents
 * it on every call, so it lives only in the master's store, never in an answer. A node that dials in (pull mode) has no address;
 * the master keeps only the SHA-256 of the credential it polls with.
 *
 * @param pool the pool the node is in: the one asked for, or {@code <pool>#<fp8>} when its host
 *        fingerprint differs from that pool's
 * @param revoked no longer contacted (or, dialling in, refused); adding or registering the node
 *        again lifts it
 */
record NodeRecord(String id, String pool, String address, String certificateSha256, String secret, String credentialSha256,
        HostFingerprint fingerprint, int maxSandboxes, boolean revoked, long addedAtUnix) {

    /** Whether the node dials in and long-polls (pull mode) rather than being dialled. */
    boolean pulls() {
        return address == null;
    }

    NodeAddress nodeAddress() {
        return NodeAddress.parse(address);
    }

    /** The pairing code, its secret unsealed by {@code box}. */
    PairingCode pairingCode(SecretBox box) throws IOException {
        return new PairingCode(certificateSha256, box.open(secret));
    }

    /** Never the secret, whatever logs a record. */
    @Override
    public String toString() {
        return "node " + id + (pulls() ? " (dials in)" : " at " + address) + " in pool " + pool + (revoked ? ", revoked" : "");
    }

    NodeRecord revoke() {
        return new NodeRecord(id, pool, address, certificateSha256, secret, credentialSha256, fingerprint, maxSandboxes, true,
                addedAtUnix);
    }
}
