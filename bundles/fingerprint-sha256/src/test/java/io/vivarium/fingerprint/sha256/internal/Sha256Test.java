package io.vivarium.fingerprint.sha256.internal;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;

import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class Sha256Test {

    @TempDir
    Path tmp;

    @Test
    void emptyFile() throws IOException {
        Path file = Files.createFile(tmp.resolve("empty"));
        assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Sha256.hex(file));
    }

    @Test
    void abc() throws IOException {
        Path file = Files.writeString(tmp.resolve("abc"), "abc", US_ASCII);
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", Sha256.hex(file));
    }

    @Test
    void aFileOfSeveralBuffersMatchesADigestOfItsBytes() throws Exception {
        byte[] content = new byte[5 * 1024 * 1024 + 123];
        new Random(1).nextBytes(content);
        Path file = Files.write(tmp.resolve("large"), content);

        assertEquals(digest(content), Sha256.hex(file));
    }

    @Test
    void manyThreadsHashingFilesOfMixedSizesAtOnce() throws Exception {
        Random random = new Random(2);
        Map<Path, String> expected = new ConcurrentHashMap<>();
        for (int i = 0; i < 200; i++) {
            // sizes around the buffer size, so a buffer left dirty by a larger file would show
            byte[] content = new byte[random.nextInt(600 * 1024)];
            random.nextBytes(content);
            expected.put(Files.write(tmp.resolve("f" + i), content), digest(content));
        }
        List<Path> files = new ArrayList<>(expected.keySet());
        for (int round = 0; round < 3; round++) {
            Collections.shuffle(files, random);
            Map<Path, String> actual = new ConcurrentHashMap<>();
            ForkJoinPool pool = new ForkJoinPool(8);
            try {
                Bounded.get(pool.submit(() -> files.parallelStream().forEach(f -> actual.put(f, hex(f)))),
                        Duration.ofSeconds(60), "hashing round " + round);
            } finally {
                pool.shutdown();
            }
            assertEquals(expected, actual);
        }
    }

    private static String hex(Path file) {
        try {
            return Sha256.hex(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String digest(byte[] content) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
    }
}
