package io.vivarium.common.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

class NetworkEntryTest {
    @Test
    void entriesAreReadInTheirCanonicalForm() {
        assertEquals("198.51.100.0/24", NetworkEntry.parse("198.51.100.77/24").toString(), "host bits dropped");
        assertEquals("203.0.113.7/32:443", NetworkEntry.parse("203.0.113.7:443").toString(), "a bare address is its /32");
        assertEquals("0.0.0.0/0", NetworkEntry.parse("0.0.0.0/0").toString());
        assertEquals("10.213.0.2", NetworkEntry.parse("10.213.0.0/30").host(2));
    }

    @Test
    void malformedEntriesSayWhatIsWrong() {
        for (String bad : List.of("", "198.51.100.0/33", "256.1.1.1", "1.2.3.4:0", "1.2.3.4:65536", "::1/128", "host.example",
                "1.2.3.4/24:80:90", " / ")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NetworkEntry.parse(bad), bad);
            assertTrue(e.getMessage().contains("\"") || e.getMessage().contains("is"), e.getMessage());
        }
    }

    @Test
    void coveringAndOverlapping() {
        NetworkEntry wide = NetworkEntry.parse("198.51.100.0/24");
        assertTrue(wide.covers(NetworkEntry.parse("198.51.100.7:443")));
        assertTrue(wide.covers(NetworkEntry.parse("198.51.100.0/25")));
        assertFalse(wide.covers(NetworkEntry.parse("198.51.0.0/16")));
        assertFalse(NetworkEntry.parse("198.51.100.0/24:443").covers(NetworkEntry.parse("198.51.100.7")), "one port covers not all");
        assertTrue(NetworkEntry.parse("198.51.100.0/24:443").covers(NetworkEntry.parse("198.51.100.7:443")));
        assertTrue(NetworkEntry.parse("0.0.0.0/0").covers(NetworkEntry.parse("169.254.169.254")));
        assertTrue(NetworkEntry.parse("169.254.0.0/16").overlaps(NetworkEntry.parse("0.0.0.0/0")));
        assertFalse(NetworkEntry.parse("169.254.0.0/16").overlaps(NetworkEntry.parse("10.0.0.0/8")));
    }
}
