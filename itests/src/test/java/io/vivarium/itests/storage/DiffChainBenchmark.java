package io.vivarium.itests.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.itests.bench.Bench;
import io.vivarium.itests.bench.BenchReport;
import io.vivarium.itests.bench.Goal;
import io.vivarium.itests.bench.Table;
import io.vivarium.storage.diffchain.internal.DiffChainStorage;
import io.vivarium.testkit.XfsLoopMount;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10's benchmark (c) at the storage level, until VMs fork from chains: materialise (what a
 * fork does with a memory image) of a 256 MiB RAM image from a depth-3 diff chain against from its
 * compaction, side by side, on a loop-mounted XFS with reflink and on the host's ext4. Each link
 * dirties 1-5% of the pages in clusters of 1-16 pages, as a guest does between two snapshots.
 * "cold": a strategy that remembers nothing (a daemon's first fork after a start; the files are in
 * the page cache either way); "warm": the median of {@value #WARM_RUNS} later ones, every link
 * remembered as verified. Not a VM spawn: no QEMU starts (VmChainBenchmark spawns VMs). Both sides
 * get the same JIT warm-up first.
 */
@ExtendWith(Bench.class)
class DiffChainBenchmark {
    static final Goal XFS = Goal.atMost("materialise from a depth-3 chain / from its compaction, warm, XFS (storage part of "
            + "benchmark (c))", 1.2, "×", 10);
    static final Goal EXT4 = Goal.atMost("materialise from a depth-3 chain / from its compaction, warm, ext4 (storage part of "
            + "benchmark (c))", 1.2, "×", 10);

    static final int SIZE = 256 << 20;
    static final int PAGE = 4096;
    static final int WARM_RUNS = 9;
    static final double[] DIRTY = { 0.02, 0.05, 0.01 };

    @TempDir
    Path dir;

    record Chain(String fs, Path dir, StoredArtifact top, StoredArtifact flat, byte[] content) {
    }

    record Row(String fs, long chainCold, long flatCold, long chainWarm, long flatWarm, long chainBytes,
            long flatBytes, String mode, int warmHashes) {
    }

    @Test
    void materialiseFromADepthThreeChainAgainstItsCompaction(BenchReport report) throws Exception {
        List<Row> rows = new ArrayList<>();
        try (XfsLoopMount xfs = XfsLoopMount.create(dir.resolve("loop"), 2L << 30)) {
            Path ext4 = Files.createDirectories(Path.of("target", "bench", "diffchain-ext4")).toAbsolutePath();
            try {
                List<Chain> chains = List.of(build("xfs (reflink=1, loop)", xfs.dir()), build("ext4", ext4));
                warmUp(Files.createDirectories(ext4.resolve("warm-up")));
                awaitOlderThan(DiffChainStorage.RACY_WINDOW, chains);
                for (Chain c : chains) {
                    rows.add(measure(c));
                }
            } finally {
                deleteAll(ext4);
            }
        }
        Table table = new Table("state on", "chain cold", "compacted cold", "ratio", "chain warm", "compacted warm", "ratio",
                "written (chain / compacted)", "mode", "files hashed when warm");
        for (Row r : rows) {
            table.row(r.fs(), r.chainCold() + " ms", r.flatCold() + " ms", String.format("%.2f×", (double) r.chainCold() / r.flatCold()),
                    r.chainWarm() + " ms", r.flatWarm() + " ms", String.format("%.2f×", warmRatio(r)),
                    (r.chainBytes() >> 20) + " / " + (r.flatBytes() >> 20) + " MiB", r.mode(), r.warmHashes());
        }
        report.add(table);
        report.add("256 MiB image, depth 3 (links dirty " + Arrays.toString(DIRTY) + " of the pages); warm: median of "
                + WARM_RUNS + " runs");
        report.check(XFS, warmRatio(rows.get(0)));
        report.check(EXT4, warmRatio(rows.get(1)));
    }

    private static double warmRatio(Row r) {
        return (double) r.chainWarm() / Math.max(1, r.flatWarm());
    }

    /** A RAM file (a quarter of it zero pages, as in a guest's free memory), a depth-3 chain on it and its compaction. */
    private static Chain build(String fs, Path dir) throws IOException {
        Random random = new Random(10);
        byte[] content = new byte[SIZE];
        random.nextBytes(content);
        Arrays.fill(content, SIZE / 4 * 3, SIZE, (byte) 0);
        Path ram = Files.write(dir.resolve("ram"), content);
        DiffChainStorage storage = new DiffChainStorage(16, DiffChainStorage.RACY_WINDOW);
        StoredArtifact link = storage.store(ArtifactKind.MEMORY, ram, null, dir.resolve("link0"), operation());
        for (int d = 1; d <= 3; d++) {
            dirty(ram, content, DIRTY[d - 1], random, SIZE);
            link = storage.store(ArtifactKind.MEMORY, ram, link, dir.resolve("link" + d), operation());
            assertEquals("diff", link.mode());
        }
        StoredArtifact flat = storage.compact(link, dir.resolve("compacted"), operation());
        Files.delete(ram);
        return new Chain(fs, dir, link, flat, content);
    }

    /** Runs store, materialise and compact once on a small chain, so that "cold" measures hashing, not the JIT. */
    private static void warmUp(Path dir) throws IOException {
        DiffChainStorage storage = new DiffChainStorage(16, Duration.ZERO);
        Random random = new Random(11);
        byte[] content = new byte[16 << 20];
        random.nextBytes(content);
        Path ram = Files.write(dir.resolve("ram"), content);
        StoredArtifact link = storage.store(ArtifactKind.MEMORY, ram, null, dir.resolve("link0"), operation());
        dirty(ram, content, 0.05, random, content.length);
        link = storage.store(ArtifactKind.MEMORY, ram, link, dir.resolve("link1"), operation());
        storage.materialise(link, dir.resolve("live"), operation());
        storage.compact(link, dir.resolve("flat"), operation());
    }

    /** Dirties about {@code share} of the pages, in runs of 1 to 16 pages at random places. */
    private static void dirty(Path ram, byte[] content, double share, Random random, int size) throws IOException {
        int pages = size / PAGE;
        int toDirty = (int) (pages * share);
        try (FileChannel ch = FileChannel.open(ram, StandardOpenOption.WRITE)) {
            while (toDirty > 0) {
                int run = Math.min(toDirty, 1 + random.nextInt(16));
                int first = random.nextInt(pages - run);
                byte[] fresh = new byte[run * PAGE];
                random.nextBytes(fresh);
                System.arraycopy(fresh, 0, content, first * PAGE, fresh.length);
                ch.write(ByteBuffer.wrap(fresh), (long) first * PAGE);
                toDirty -= run;
            }
        }
    }

    private static Row measure(Chain c) throws IOException {
        DiffChainStorage storage = new DiffChainStorage(16, DiffChainStorage.RACY_WINDOW);
        long[] chainCold = timed(storage, c.top(), c.dir().resolve("cold-chain"), c.content());
        long[] flatCold = timed(storage, c.flat(), c.dir().resolve("cold-flat"), c.content());
        int hashed = storage.filesHashed();
        long[] chainWarm = new long[WARM_RUNS];
        long[] flatWarm = new long[WARM_RUNS];
        long chainBytes = 0;
        long flatBytes = 0;
        for (int i = 0; i < WARM_RUNS; i++) {
            long[] a = timed(storage, c.top(), c.dir().resolve("warm-chain"), null);
            long[] b = timed(storage, c.flat(), c.dir().resolve("warm-flat"), null);
            chainWarm[i] = a[0];
            flatWarm[i] = b[0];
            chainBytes = a[1];
            flatBytes = b[1];
        }
        String mode = storage.materialise(c.flat(), c.dir().resolve("mode"), operation()).mode();
        Files.delete(c.dir().resolve("mode"));
        return new Row(c.fs(), chainCold[0], flatCold[0], median(chainWarm), median(flatWarm), chainBytes, flatBytes,
                mode, storage.filesHashed() - hashed);
    }

    /** Milliseconds and bytes written of one materialise; checks the content when given, then deletes the copy. */
    private static long[] timed(DiffChainStorage storage, StoredArtifact stored, Path target, byte[] expected)
            throws IOException {
        long t0 = System.nanoTime();
        StoredArtifact made = storage.materialise(stored, target, operation());
        long millis = (System.nanoTime() - t0) / 1_000_000;
        if (expected != null) {
            assertArrayEquals(sha256(expected), HexFormat.of().parseHex(made.contentHash()));
            assertArrayEquals(expected, Files.readAllBytes(target), "the materialised image holds the chain's content");
        }
        Files.delete(target);
        return new long[] { millis, made.bytesWritten() };
    }

    /** Verified files are remembered only once older than the racy window: wait until the newest is. */
    private static void awaitOlderThan(Duration window, List<Chain> chains) throws Exception {
        Instant newest = Instant.EPOCH;
        for (Chain c : chains) {
            for (StoredArtifact a = c.top(); a != null; a = a.parent()) {
                FileTime changed = (FileTime) Files.getAttribute(a.path(), "unix:ctime");
                newest = newest.isAfter(changed.toInstant()) ? newest : changed.toInstant();
            }
            FileTime changed = (FileTime) Files.getAttribute(c.flat().path(), "unix:ctime");
            newest = newest.isAfter(changed.toInstant()) ? newest : changed.toInstant();
        }
        Duration wait = Duration.between(Instant.now(), newest.plus(window).plusMillis(100));
        if (!wait.isNegative()) {
            Thread.sleep(wait.toMillis());
        }
    }

    private static long median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static byte[] sha256(byte[] content) throws IOException {
        try {
            return MessageDigest.getInstance("SHA-256").digest(content);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
    }

    private static OperationContext operation() {
        return OperationContext.until(Instant.now().plus(Duration.ofMinutes(5)));
    }

    private static void deleteAll(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (var files = Files.walk(dir)) {
            for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
