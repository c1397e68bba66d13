package io.vivarium.fleet.internal;

import java.util.Locale;
import java.util.regex.Pattern;

import io.vivarium.api.ApiException;

/**
 * A node's pairing code, {@code <certificate SHA-256>.<secret>}: the master pins the node's TLS
 * certificate by the first half and presents the second on every call.
 */
record PairingCode(String certificateSha256, String secret) {
    private static final Pattern FORM = Pattern.compile("([0-9a-f]{64})\\.([0-9a-f]{32})");

    static PairingCode parse(String text) {
        if (text == null) {
            throw ApiException.badRequest("pairing_code is required: the content of the node's pki/node/pairing-code; nothing was dialled");
        }
        var m = FORM.matcher(text.strip().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw ApiException.badRequest("pairing_code must be <64 hex digits>.<32 hex digits> (the node's "
                    + "pki/node/pairing-code, as written); nothing was dialled");
        }
        return new PairingCode(m.group(1), m.group(2));
    }

    @Override
    public String toString() {
        return certificateSha256 + ".***";
    }
}
