package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vivarium.api.ApiException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PairingCodeTest {
    private static final String SHA = "68fed7b400000000000000000000000000000000000000000000000000000000";
    private static final String SECRET = "0123456789abcdef0123456789abcdef";

    @Test
    void theCodeIsTheCertificateDigestAndTheSecret() {
        PairingCode code = PairingCode.parse(" " + SHA.toUpperCase() + "." + SECRET + "\n");
        assertEquals(SHA, code.certificateSha256());
        assertEquals(SECRET, code.secret());
        assertFalse(code.toString().contains(SECRET), "the secret is never printed");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "abc", SHA, SHA + ".", SHA + "." + SECRET + "0", "g8fed7b400000000000000000000000000000000000000000000000000000000." + SECRET, SECRET + "." + SHA})
    void aMalformedCodeIs400(String text) {
        assertEquals(400, assertThrows(ApiException.class, () -> PairingCode.parse(text)).status());
    }
}
