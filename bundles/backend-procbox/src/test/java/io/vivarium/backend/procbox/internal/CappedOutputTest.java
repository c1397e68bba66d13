package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

class CappedOutputTest {

    private static void write(CappedOutput output, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        output.write(bytes, 0, bytes.length);
    }

    @Test
    void keepsEverythingUpToTheCap() {
        CappedOutput output = new CappedOutput(6);
        write(output, "abc");
        write(output, "def");

        assertFalse(output.truncated());
        assertArrayEquals("abcdef".getBytes(StandardCharsets.UTF_8), output.close());
    }

    @Test
    void keepsTheFirstBytesAndFlagsTheRest() {
        CappedOutput output = new CappedOutput(4);
        write(output, "abc");
        write(output, "def");
        write(output, "ghi");

        assertTrue(output.truncated());
        assertArrayEquals("abcd".getBytes(StandardCharsets.UTF_8), output.close());
    }

    @Test
    void discardsWritesAfterClose() {
        CappedOutput output = new CappedOutput(4);
        write(output, "ab");
        output.close();
        write(output, "cdefgh");

        assertFalse(output.truncated());
        assertArrayEquals("ab".getBytes(StandardCharsets.UTF_8), output.close());
    }
}
