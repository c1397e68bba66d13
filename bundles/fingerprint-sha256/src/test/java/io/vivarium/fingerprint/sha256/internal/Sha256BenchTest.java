package io.vivarium.fingerprint.sha256.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prints how fast files are hashed, next to openssl and sha256sum on the same files (page cache
 * warm); run with {@code -Dfingerprint.bench=true -Dtest=Sha256BenchTest}.
 */
@EnabledIfSystemProperty(named = "fingerprint.bench", matches = "true")
class Sha256BenchTest {

    private static final List<String> TOOLS = List.of("openssl dgst -sha256 -r", "sha256sum");

    @TempDir
    Path tmp;

    @Test
    void oneGibibyteFile() throws Exception {
        byte[] chunk = new byte[1024 * 1024];
        new Random(3).nextBytes(chunk);
        Path file = tmp.resolve("1GiB");
        try (OutputStream out = Files.newOutputStream(file)) {
            for (int i = 0; i < 1024; i++) {
                out.write(chunk);
            }
        }
        String hash = Sha256.hex(file);
        for (int round = 1; round <= 3; round++) {
            long start = System.nanoTime();
            assertEquals(hash, Sha256.hex(file));
            report("1 GiB, Sha256.hex, round " + round, start);
        }
        for (String tool : TOOLS) {
            long start = System.nanoTime();
            assertEquals(hash, firstField(run(tool, tmp, List.of(file.getFileName().toString()))));
            report("1 GiB, " + tool, start);
        }
    }

    @Test
    void tenThousandSmallFiles() throws Exception {
        Random random = new Random(4);
        List<Path> files = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            byte[] content = new byte[4096];
            random.nextBytes(content);
            files.add(Files.write(tmp.resolve("f" + i), content));
            names.add("f" + i);
        }
        List<String> hashes = files.stream().map(Sha256BenchTest::hex).toList();
        for (int round = 1; round <= 3; round++) {
            long start = System.nanoTime();
            files.forEach(Sha256BenchTest::hex);
            report("10,000 x 4 KiB, Sha256.hex, one thread, round " + round, start);
            start = System.nanoTime();
            files.parallelStream().forEach(Sha256BenchTest::hex);
            report("10,000 x 4 KiB, Sha256.hex, parallel stream (" + Runtime.getRuntime().availableProcessors()
                    + " cpus), round " + round, start);
        }
        for (String tool : TOOLS) {
            long start = System.nanoTime();
            List<String> lines = run(tool, tmp, names).lines().toList();
            report("10,000 x 4 KiB, " + tool + " (one process)", start);
            assertEquals(hashes, lines.stream().map(Sha256BenchTest::firstField).toList());
        }
    }

    private static String hex(Path file) {
        try {
            return Sha256.hex(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String run(String tool, Path dir, List<String> args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(tool.split(" ")));
        command.addAll(args);
        Process process = new ProcessBuilder(command).directory(dir.toFile())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, Bounded.waitFor(process, Duration.ofMinutes(10), tool), tool);
        return out;
    }

    private static String firstField(String line) {
        return line.substring(0, line.indexOf(' '));
    }

    private static void report(String what, long startNanos) {
        System.out.printf("fingerprint bench: %-70s %8.3f s%n", what, (System.nanoTime() - startNanos) / 1e9);
    }
}
