package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.ApiException;
import io.vivarium.api.CommandOutput.Chunk;

import org.junit.jupiter.api.Test;

/** A background command's log: read from any offset, nothing lost or repeated, readers woken by output and by the end. */
class CommandLogTest {

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aReadFromAnyOffsetStartsThereAndKeepsTheOrderOfBothStreams() throws Exception {
        CommandLog log = new CommandLog();
        log.append(Chunk.STDOUT, bytes("ab"));
        log.append(Chunk.STDERR, new byte[0]);
        log.append(Chunk.STDERR, bytes("cde"));
        log.append(Chunk.STDOUT, bytes("f"));
        assertEquals(6, log.size());

        List<Chunk> all = log.from(0, Duration.ZERO);
        assertEquals(List.of(Chunk.STDOUT, Chunk.STDERR, Chunk.STDOUT), all.stream().map(Chunk::stream).toList());
        assertEquals(List.of(0L, 2L, 5L), all.stream().map(Chunk::offset).toList());

        List<Chunk> mid = log.from(3, Duration.ZERO);
        assertEquals(3, mid.get(0).offset());
        assertArrayEquals(bytes("de"), mid.get(0).data(), "a chunk the offset falls into is cut there");
        assertEquals(Chunk.STDERR, mid.get(0).stream());
        assertArrayEquals(bytes("f"), mid.get(1).data());
        assertEquals(List.of(), log.from(6, Duration.ZERO), "at the end: nothing yet");
    }

    @Test
    void anOffsetPastTheEndIsA400() {
        CommandLog log = new CommandLog();
        log.append(Chunk.STDOUT, bytes("ab"));
        assertEquals(400, assertThrows(ApiException.class, () -> log.from(3, Duration.ZERO)).status());
        assertEquals(400, assertThrows(ApiException.class, () -> log.from(-1, Duration.ZERO)).status());
    }

    @Test
    void aWaitingReaderIsWokenByOutputAndByTheEnd() throws Exception {
        CommandLog log = new CommandLog();
        CompletableFuture<List<Chunk>> waiting = CompletableFuture.supplyAsync(() -> read(log, 0));
        log.append(Chunk.STDOUT, bytes("x"));
        assertArrayEquals(bytes("x"), waiting.get(30, TimeUnit.SECONDS).get(0).data());

        CompletableFuture<List<Chunk>> atTheEnd = CompletableFuture.supplyAsync(() -> read(log, 1));
        log.close();
        assertEquals(List.of(), atTheEnd.get(30, TimeUnit.SECONDS), "a closed log answers at once with nothing");
    }

    private static List<Chunk> read(CommandLog log, long offset) {
        try {
            return log.from(offset, Duration.ofMinutes(1));
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
