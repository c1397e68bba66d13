package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** A stream read ahead gives the same bytes in order, then its end, or the failure that ended it. */
class ReadAheadTest {

    @Test
    void givesEveryByteInOrderThenTheEnd() throws Exception {
        byte[] data = new byte[10 * 1000 + 7];
        new Random(3).nextBytes(data);
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        try (ReadAhead ahead = new ReadAhead(new ByteArrayInputStream(data), 1000)) {
            byte[] chunk = new byte[1000];
            for (int n; (n = ahead.next(chunk)) > 0;) {
                got.write(chunk, 0, n);
            }
            assertEquals(0, ahead.next(chunk));
        }
        assertArrayEquals(data, got.toByteArray());
    }

    @Test
    void aFailureOfTheSourceReachesTheConsumerAfterWhatCameBefore() throws Exception {
        InputStream failing = new SequenceInputStream(new ByteArrayInputStream(new byte[1500]), new InputStream() {
            @Override
            public int read() throws IOException {
                throw new IOException("the holder went away");
            }
        });
        try (ReadAhead ahead = new ReadAhead(failing, 1000)) {
            assertEquals(1000, ahead.next(new byte[1000]));
            assertEquals("the holder went away", assertThrows(IOException.class, () -> ahead.next(new byte[1000])).getMessage());
        }
        try (ReadAhead ahead = new ReadAhead(new InputStream() {
            @Override
            public int read() {
                throw new IllegalStateException("a bug");
            }
        }, 10)) {
            assertThrows(IOException.class, () -> ahead.next(new byte[10]), "never a hang");
        }
    }
}
