package io.vivarium.api.spi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;

import org.junit.jupiter.api.Test;

/** What a plug-in built against SPI 1.1 answers to the methods SPI 1.2 added. */
class SpiDefaultsTest {
    private final AtomicReference<byte[]> written = new AtomicReference<>();

    private final GuestChannel oldChannel = new GuestChannel() {
        @Override
        public PingResult ping() {
            return new PingResult(true, 1, 0);
        }

        @Override
        public ExecResult exec(ExecRequest request) {
            return new ExecResult("ran", "", 0, false, false, 0);
        }

        @Override
        public String eval(String code, int timeoutSecs) {
            return "2";
        }

        @Override
        public byte[] readFile(String path, int maxBytes) {
            return new byte[] { 1, 0, 2 };
        }

        @Override
        public void writeFile(String path, byte[] content) {
            written.set(content);
        }
    };

    @Test
    void newChannelMethodsFallBackToTheOldOnes() throws Exception {
        ExecRequest req = new ExecRequest(List.of("true"), 1, null, "/", null, 1);
        assertEquals("ran", oldChannel.exec(req, null).stdout());
        assertEquals(501, assertThrows(ApiException.class, () -> oldChannel.exec(req, "agent")).status());
        assertEquals("2", oldChannel.evaluate("1+1", 5).result());
        assertNull(oldChannel.evaluate("1+1", 5).error());
        assertEquals(GuestLimits.DEFAULT, oldChannel.limits());
        assertEquals(501, assertThrows(ApiException.class, () -> oldChannel.setTime(Instant.now())).status(),
                "a channel of SPI 1.2 cannot set the clock: core logs it after a restore");
        assertEquals(501, assertThrows(ApiException.class,
                () -> oldChannel.freezeFilesystems(List.of("/work"), Duration.ofSeconds(10))).status());

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        oldChannel.readFile("/f", 10, out);
        assertArrayEquals(new byte[] { 1, 0, 2 }, out.toByteArray());
        oldChannel.writeFile("/f", new ByteArrayInputStream(new byte[] { 9, 9 }), 2);
        assertArrayEquals(new byte[] { 9, 9 }, written.get());
        assertEquals(413, assertThrows(ApiException.class,
                () -> oldChannel.writeFile("/g", new ByteArrayInputStream(new byte[3]), 2)).status());
    }

    @Test
    void aContextPastItsDeadlineStopsTheNextStep() {
        OperationContext late = OperationContext.until(Instant.now().minusSeconds(1));
        assertEquals(Duration.ZERO, late.remaining());
        assertEquals(504, assertThrows(ApiException.class, () -> late.checkpoint("booting")).status());
        OperationContext.until(Instant.now().plusSeconds(60)).checkpoint("booting");
    }

    @Test
    void recordsKeepTheirOldConstructors() {
        InstanceSpec spec = new InstanceSpec("sb", java.nio.file.Path.of("/tmp"), 64);
        assertNull(spec.vcpus());
        assertNull(spec.image());
    }
}
