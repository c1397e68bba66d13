package io.vivarium.itests.fingerprint;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.vivarium.fingerprint.sha256.internal.Sha256Mode;
import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Stats;
import io.vivarium.itests.bench.Table;
import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sha256 fingerprint mode alone (what core calls per file for a baseline), without the daemon,
 * the walk or HTTP, next to {@code openssl dgst -sha256} and {@code sha256sum} on the same files,
 * page cache warm: one 1 GiB file, and 10,000 files of 4 KiB (one thread and a parallel stream,
 * against one process of each tool). Every contender hashes once untimed first, then
 * {@value #ROUNDS} rounds alternate between them. No goal of its own: ChangeSetBenchmark holds
 * issue 3's goals for baselines through the daemon.
 */
@ExtendWith(Bench.class)
class Sha256Benchmark {
    static final int ROUNDS = 3;
    private static final List<String> TOOLS = List.of("openssl dgst -sha256 -r", "sha256sum");
    private static final Sha256Mode SHA256 = new Sha256Mode();

    @TempDir
    Path tmp;

    @Test
    void hashingAgainstOpensslAndSha256sum(BenchReport report) throws Exception {
        Table table = new Table("files", "contender", "p50 s", "every round, s");

        byte[] chunk = new byte[1024 * 1024];
        new Random(3).nextBytes(chunk);
        Path big = tmp.resolve("1GiB");
        try (OutputStream out = Files.newOutputStream(big)) {
            for (int i = 0; i < 1024; i++) {
                out.write(chunk);
            }
        }
        String hash = hex(big);
        List<Contender> large = new ArrayList<>(List.of(new Contender("Sha256Mode.fingerprint", () -> {
            assertEquals(hash, hex(big));
        })));
        for (String tool : TOOLS) {
            large.add(new Contender(tool, () -> assertEquals(hash, firstField(run(tool, tmp, List.of(big.getFileName().toString()))))));
        }
        measure(table, "one 1 GiB file", large);
        Files.delete(big);

        Path small = Files.createDirectories(tmp.resolve("small"));
        Random random = new Random(4);
        List<Path> files = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            byte[] content = new byte[4096];
            random.nextBytes(content);
            files.add(Files.write(small.resolve("f" + i), content));
            names.add("f" + i);
        }
        List<String> hashes = files.stream().map(Sha256Benchmark::hex).toList();
        List<Contender> many = new ArrayList<>(List.of(
                new Contender("Sha256Mode.fingerprint, one thread", () -> assertEquals(hashes,
                        files.stream().map(Sha256Benchmark::hex).toList())),
                new Contender("Sha256Mode.fingerprint, parallel stream (" + Runtime.getRuntime().availableProcessors()
                        + " CPUs)", () -> assertEquals(hashes, files.parallelStream().map(Sha256Benchmark::hex).toList()))));
        for (String tool : TOOLS) {
            many.add(new Contender(tool + " (one process)", () -> assertEquals(hashes,
                    run(tool, small, names).lines().map(Sha256Benchmark::firstField).toList())));
        }
        measure(table, "10,000 × 4 KiB files", many);
        report.add(table);
    }

    private interface Hashing {
        void run() throws Exception;
    }

    private record Contender(String name, Hashing hashing) {
    }

    /** One untimed run of each contender, then {@value #ROUNDS} rounds of all; a row per contender. */
    private static void measure(Table table, String files, List<Contender> contenders) throws Exception {
        for (Contender c : contenders) {
            c.hashing().run();
        }
        List<List<Double>> seconds = new ArrayList<>();
        contenders.forEach(c -> seconds.add(new ArrayList<>()));
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < contenders.size(); i++) {
                long t0 = System.nanoTime();
                contenders.get(i).hashing().run();
                seconds.get(i).add(Stats.millisSince(t0) / 1000);
            }
        }
        for (int i = 0; i < contenders.size(); i++) {
            table.row(files, contenders.get(i).name(), String.format("%.3f", Stats.p50(seconds.get(i))),
                    seconds.get(i).stream().map(s -> String.format("%.3f", s)).toList().toString());
        }
    }

    private static String hex(Path file) {
        try {
            return SHA256.fingerprint(file, Files.readAttributes(file, BasicFileAttributes.class));
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
}
