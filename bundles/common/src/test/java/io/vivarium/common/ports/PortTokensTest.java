package io.vivarium.common.ports;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PortTokensTest {
    @TempDir
    Path state;

    @Test
    void aTokenIsGoodForItsExposureUntilItExpires() {
        PortTokens tokens = new PortTokens(state);
        Instant now = Instant.parse("2026-12-05T10:00:00Z");
        String token = tokens.sign("sb-1", 8000, "n1", now.plusSeconds(60));
        assertTrue(tokens.valid(token, "sb-1", 8000, "n1", now));
        assertFalse(tokens.valid(token, "sb-1", 8000, "n1", now.plusSeconds(60)), "expired");
        assertFalse(tokens.valid(token, "sb-2", 8000, "n1", now), "another sandbox");
        assertFalse(tokens.valid(token, "sb-1", 8001, "n1", now), "another port");
        assertFalse(tokens.valid(token, "sb-1", 8000, "n2", now), "the port exposed again");
        String later = (now.getEpochSecond() + 3600) + token.substring(token.indexOf('.'));
        assertFalse(tokens.valid(later, "sb-1", 8000, "n1", now), "an expiry moved by hand");
        assertFalse(tokens.valid("garbage", "sb-1", 8000, "n1", now));
        assertFalse(tokens.valid("x.y", "sb-1", 8000, "n1", now));
    }

    @Test
    void theKeyIsMadeOnceRootOnlyAndKeptAcrossRestarts() throws Exception {
        String token = new PortTokens(state).sign("sb-1", 80, "n", Instant.now().plusSeconds(60));
        Path key = state.resolve(PortTokens.KEY_FILE);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)));
        byte[] first = Files.readAllBytes(key);
        assertTrue(new PortTokens(state).valid(token, "sb-1", 80, "n", Instant.now()));
        assertArrayEquals(first, Files.readAllBytes(key));
    }
}
