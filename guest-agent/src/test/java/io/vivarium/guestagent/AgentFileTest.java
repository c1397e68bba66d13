package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** guest-file-* and vivarium-file-*. */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentFileTest {
    @TempDir
    Path dir;
    AgentProcess agent;
    AgentConnection conn;

    @BeforeEach
    void start() throws Exception {
        agent = AgentProcess.start(dir);
        conn = agent.connect();
    }

    @AfterEach
    void stop() throws Exception {
        agent.close();
    }

    static String b64(byte[] b) {
        return Base64.getEncoder().encodeToString(b);
    }

    static byte[] filled(int size, char c) {
        byte[] b = new byte[size];
        Arrays.fill(b, (byte) c);
        return b;
    }

    @Test
    void aMultiChunkWriteIsAtomicForAConcurrentReader() throws Exception {
        Path target = dir.resolve("big.bin");
        int size = 8 << 20;
        Files.write(target, filled(size, 'a'));
        AtomicBoolean done = new AtomicBoolean();
        AtomicReference<String> torn = new AtomicReference<>();
        AtomicInteger reads = new AtomicInteger();
        Thread reader = Thread.ofPlatform().start(() -> {
            while (!done.get() && torn.get() == null) {
                try {
                    byte[] seen = Files.readAllBytes(target);
                    reads.incrementAndGet();
                    boolean whole = seen.length == size && (allEqual(seen, 'a') || allEqual(seen, 'b'));
                    if (!whole) {
                        torn.set("saw " + seen.length + " bytes, first " + (seen.length > 0 ? (char) seen[0] : '-'));
                    }
                } catch (IOException e) {
                    torn.set("read failed: " + e);
                }
            }
        });
        byte[] chunk = filled(1 << 20, 'b');
        JsonNode first = conn.ok("vivarium-file-write", Map.of("path", target.toString(), "data-b64", b64(chunk), "last", false));
        long h = first.get("handle").asLong();
        for (int i = 1; i < 8; i++) {
            Map<String, Object> a = new HashMap<>(Map.of("handle", h, "data-b64", b64(chunk), "last", i == 7));
            JsonNode r = conn.ok("vivarium-file-write", a);
            assertEquals((long) (i + 1) << 20, r.get("bytes").asLong());
            assertEquals(i == 7, !r.has("handle"));
        }
        done.set(true);
        assertTrue(reader.join(Duration.ofSeconds(30)), "the reader ends once told to");
        assertNull(torn.get());
        assertTrue(reads.get() > 0);
        assertTrue(allEqual(Files.readAllBytes(target), 'b'));
        try (var left = Files.list(dir)) {
            assertEquals(0, left.filter(p -> p.getFileName().toString().startsWith(".vivarium-tmp")).count(),
                    "no temporary file is left behind");
        }
        conn.error("vivarium-file-write", Map.of("handle", h, "data-b64", ""), "NotFound");
    }

    static boolean allEqual(byte[] b, char c) {
        for (byte x : b) {
            if (x != (byte) c) {
                return false;
            }
        }
        return true;
    }

    @Test
    void aSymlinkAsTheFinalComponentIsReplacedNotFollowed() throws IOException {
        Path secret = dir.resolve("secret");
        Files.writeString(secret, "keep me");
        Path link = dir.resolve("link");
        Files.createSymbolicLink(link, secret);
        JsonNode r = conn.ok("vivarium-file-write", Map.of("path", link.toString(), "data-b64", b64("new".getBytes(StandardCharsets.UTF_8)), "mode", 0600));
        assertEquals(3, r.get("bytes").asLong());
        assertFalse(Files.isSymbolicLink(link));
        assertEquals("new", Files.readString(link));
        assertEquals("keep me", Files.readString(secret));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(link)));
    }

    @Test
    void fileReadReturnsDataEofAndSize() throws IOException {
        Path f = dir.resolve("f");
        Files.writeString(f, "0123456789");
        JsonNode r = conn.ok("vivarium-file-read", Map.of("path", f.toString(), "offset", 2, "count", 3));
        assertEquals("234", new String(Base64.getDecoder().decode(r.get("data-b64").asText()), StandardCharsets.UTF_8));
        assertFalse(r.get("eof").asBoolean());
        assertEquals(10, r.get("size").asLong());
        r = conn.ok("vivarium-file-read", Map.of("path", f.toString(), "offset", 7));
        assertEquals("789", new String(Base64.getDecoder().decode(r.get("data-b64").asText()), StandardCharsets.UTF_8));
        assertTrue(r.get("eof").asBoolean());
        conn.error("vivarium-file-read", Map.of("path", dir.resolve("missing").toString()), "NotFound");
        conn.error("vivarium-file-read", Map.of("path", dir.toString()), "InvalidParameter");
        Path link = dir.resolve("l");
        Files.createSymbolicLink(link, f);
        r = conn.ok("vivarium-file-read", Map.of("path", link.toString()));
        assertEquals("0123456789", new String(Base64.getDecoder().decode(r.get("data-b64").asText()), StandardCharsets.UTF_8),
                "a symlink is followed, as the agent's user");
        Files.createSymbolicLink(dir.resolve("dangling"), dir.resolve("nowhere"));
        conn.error("vivarium-file-read", Map.of("path", dir.resolve("dangling").toString()), "NotFound");
        conn.error("vivarium-file-read", Map.of("path", "relative"), "InvalidParameter");
        conn.error("vivarium-file-read", Map.of("path", f.toString(), "count", (1 << 20) + 1), "InvalidParameter");
        conn.error("vivarium-file-write", Map.of("path", dir.resolve("nodir/x").toString(), "data-b64", ""), "NotFound");
    }

    @Test
    void guestFileHandlesReadAndWrite() throws IOException {
        Path f = dir.resolve("g");
        long h = conn.ok("guest-file-open", Map.of("path", f.toString(), "mode", "w+")).asLong();
        JsonNode w = conn.ok("guest-file-write", Map.of("handle", h, "buf-b64", b64("hello world".getBytes(StandardCharsets.UTF_8)), "count", 5));
        assertEquals(5, w.get("count").asInt());
        assertTrue(conn.ok("guest-file-close", Map.of("handle", h)).isObject());
        assertEquals("hello", Files.readString(f));
        h = conn.ok("guest-file-open", Map.of("path", f.toString())).asLong();
        JsonNode r = conn.ok("guest-file-read", Map.of("handle", h, "count", 100));
        assertEquals(5, r.get("count").asInt());
        assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8), Base64.getDecoder().decode(r.get("buf-b64").asText()));
        assertTrue(r.get("eof").asBoolean());
        conn.ok("guest-file-close", Map.of("handle", h));
        conn.error("guest-file-close", Map.of("handle", h), "NotFound");
        conn.error("guest-file-open", Map.of("path", f.toString(), "mode", "rw"), "InvalidParameter");
        conn.error("guest-file-open", Map.of("path", dir.resolve("missing").toString()), "NotFound");
    }

    /** A client that gives up half way through a chunked write leaves no temp file, fd or write slot behind. */
    @Test
    void aChunkedWriteIsDiscardedWhenItsConnectionCloses() throws Exception {
        Path target = dir.resolve("abandoned.bin");
        try (AgentConnection writer = agent.connect()) {
            writer.ok("vivarium-file-write", Map.of("path", target.toString(), "data-b64", b64(new byte[4096]), "last", false));
            assertTrue(temporaryFiles().size() == 1, "the write's temporary file: " + temporaryFiles());
        }
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (!temporaryFiles().isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "still there after the connection closed: " + temporaryFiles());
            AgentProcess.pause();
        }
        assertFalse(Files.exists(target));
        for (int i = 0; i < 65; i++) {
            try (AgentConnection writer = agent.connect()) {
                writer.ok("vivarium-file-write", Map.of("path", target.toString(), "data-b64", b64(new byte[16]), "last", false));
            }
        }
    }

    private java.util.List<Path> temporaryFiles() throws IOException {
        try (var files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().startsWith(".vivarium-tmp-")).toList();
        }
    }
}
