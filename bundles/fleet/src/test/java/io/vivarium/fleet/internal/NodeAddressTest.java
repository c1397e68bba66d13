package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class NodeAddressTest {
    @Test
    void aHostWithoutAPortIsPort80AsTheSeedSays() {
        assertEquals(new NodeAddress("10.2.4.17", 80), NodeAddress.parse("10.2.4.17"));
        assertEquals(new NodeAddress("node-3.example", 8443), NodeAddress.parse("node-3.example:8443"));
    }

    @Test
    void ipv6IsWrittenInBrackets() {
        assertEquals(new NodeAddress("[fd00::17]", 8889), NodeAddress.parse("[fd00::17]:8889"));
        assertEquals("[fd00::17]:80", NodeAddress.parse("[fd00::17]").toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "fd00::17", "host:0", "host:65536", "host:port", "http://host:80", "a..b", "host/x", "[fd00::1]x",
            "host:80:81", "-host", "[::::]", "[1.2.3.4]"})
    void malformedAddressesAre400AndSayNothingWasDialled(String address) {
        ApiException e = assertThrows(ApiException.class, () -> NodeAddress.parse(address));
        assertEquals(400, e.status());
        assertTrue(e.getMessage().contains("nothing was dialled"), e.getMessage());
    }
}
