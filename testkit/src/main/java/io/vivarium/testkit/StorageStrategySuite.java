package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategy;
import io.vivarium.api.spi.StoredArtifact;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The contract every {@link StorageStrategy} passes for one {@link ArtifactKind}: round trips
 * through store, materialise and compact keep the content; a store leaves its source unchanged and
 * usable; delete removes the artifact's own files and never its parent's; every result says its
 * mode; a call that throws leaves nothing behind; an artifact appears at its target whole or not at
 * all; a chain of links holds each link's content, also when materialised from several threads at
 * once; where content hashes are kept, a parent changed in place is refused. A strategy's test
 * extends this class once per kind it handles (e.g. as {@code @Nested}
 * classes), supplying the strategy and the kind, and where the default does not fit, an
 * {@link ArtifactContent} that writes, changes and reads an artifact of that kind ({@link #content()}). A strategy that does not
 * {@linkplain StorageStrategy#supports support} the kind in the test's directory skips every check
 * with that reason, unless the test {@linkplain #checksFallback() checks its fallback}; a test may
 * put that directory on a particular filesystem ({@link #workDir}).
 */
public abstract class StorageStrategySuite {

    /** How the suite makes, changes and reads an artifact of the kind under test. */
    public interface ArtifactContent {

        /** A new source at {@code path} holding {@code content} (its length a multiple of 64 KiB). */
        void write(Path path, byte[] content) throws IOException;

        /** Overwrites {@code length} bytes at {@code offset} of the source at {@code path} with {@code value}, in place. */
        void fill(Path path, long offset, int length, byte value) throws IOException;

        /** The content {@code path} stands for (for a disk image: what a guest would read). */
        byte[] read(Path path) throws IOException;

        /**
         * Something equal for as long as the file or files at {@code path} are unchanged (not only
         * their content: a store must not rewrite its source). By default the bytes and the
         * modification time of a plain file.
         */
        default Object state(Path path) throws IOException {
            return List.of(Arrays.hashCode(Files.readAllBytes(path)), Files.getLastModifiedTime(path));
        }

        /** A plain file whose content is its bytes (a raw disk, a RAM file). */
        ArtifactContent FILE = new ArtifactContent() {
            @Override
            public void write(Path path, byte[] content) throws IOException {
                Files.write(path, content);
            }

            @Override
            public void fill(Path path, long offset, int length, byte value) throws IOException {
                try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
                    byte[] bytes = new byte[length];
                    Arrays.fill(bytes, value);
                    ByteBuffer buf = ByteBuffer.wrap(bytes);
                    while (buf.hasRemaining()) {
                        ch.write(buf, offset + buf.position());
                    }
                }
            }

            @Override
            public byte[] read(Path path) throws IOException {
                return Files.readAllBytes(path);
            }
        };

        /** A directory tree: the content in files over nested folders (a workspace). */
        ArtifactContent TREE = new TreeContent();
    }

    /** 16 MiB: large enough that a tool writing a target in place is seen doing it. */
    private static final int SIZE = 16 << 20;
    private static final int CHANGE = 1 << 20;
    private static final Duration PATIENCE = Duration.ofMinutes(2);

    @TempDir
    private Path temp;

    /** The directory the current check works in: what {@link #workDir} made of a fresh temporary one. */
    protected Path dir;

    private byte[] content;

    /** The strategy under test; may be the same instance for every check. */
    protected abstract StorageStrategy strategy();

    protected abstract ArtifactKind kind();

    /**
     * How the checks make and read an artifact: by default {@link ArtifactContent#TREE} for a
     * workspace and {@link ArtifactContent#FILE} for every other kind; a strategy whose artifacts are
     * read differently (a qcow2 disk, a memory image) says how.
     */
    protected ArtifactContent content() {
        return kind() == ArtifactKind.WORKSPACE ? ArtifactContent.TREE : ArtifactContent.FILE;
    }

    /** The modes this strategy may report for {@link #kind()} here, e.g. {@code reflink} and {@code copy}. */
    protected abstract Set<String> modes();

    /**
     * The empty directory a check works in, given a fresh temporary one: by default that one; a test
     * may return one on a particular filesystem (an {@link XfsLoopMount}), or skip with the reason.
     */
    protected Path workDir(Path temp) throws IOException {
        return temp;
    }

    /**
     * Whether the checks also run where the strategy does not {@linkplain StorageStrategy#supports
     * support} the kind and falls back (a reflink strategy's full copy on ext4); by default they are
     * skipped there.
     */
    protected boolean checksFallback() {
        return false;
    }

    @BeforeEach
    void needsSupport() throws IOException {
        Assumptions.assumeTrue(strategy().kinds().contains(kind()), () -> strategy().name() + " does not handle " + kind());
        dir = workDir(temp);
        Assumptions.assumeTrue(checksFallback() || strategy().supports(kind(), dir),
                () -> strategy().name() + " does not support " + kind() + " in " + dir + " on this host");
        content = new byte[SIZE];
        new Random(42).nextBytes(content);
    }

    protected static OperationContext operation() {
        return OperationContext.until(Instant.now().plus(PATIENCE));
    }

    private Path source() throws IOException {
        Path source = dir.resolve("source");
        content().write(source, content);
        return source;
    }

    private byte[] changed(byte value) {
        byte[] expected = content.clone();
        Arrays.fill(expected, CHANGE, 2 * CHANGE, value);
        return expected;
    }

    private void assertResult(StoredArtifact result, Path target) {
        assertEquals(kind(), result.kind());
        assertEquals(target.toAbsolutePath(), result.path().toAbsolutePath(), "the artifact is where it was asked to be");
        assertNotNull(result.mode(), "every result says its mode");
        assertTrue(modes().contains(result.mode()), () -> "mode " + result.mode() + " is not one of " + modes());
        assertTrue(strategy().modes().contains(result.mode()),
                () -> "mode " + result.mode() + " is not declared in modes() " + strategy().modes() + ", so it could not be read back");
        assertTrue(result.bytesWritten() >= 0);
        if (result.parent() == null) {
            assertEquals(0, result.depth(), "an artifact without a parent stands alone");
        } else {
            assertEquals(result.parent().depth() + 1, result.depth(), "one link deeper than its parent");
        }
    }

    @Test
    void aStoreKeepsTheContentAndLeavesTheSourceUnchangedAndUsable() throws IOException {
        Path source = source();
        Object before = content().state(source);
        Path target = dir.resolve("stored");
        StoredArtifact stored = strategy().store(kind(), source, null, target, operation());
        assertResult(stored, target);
        assertArrayEquals(content, content().read(target), "the stored artifact holds the source's content");
        assertEquals(before, content().state(source), "the source is unchanged");
        strategy().verify(stored);

        content().fill(source, CHANGE, CHANGE, (byte) 1);
        assertArrayEquals(changed((byte) 1), content().read(source), "the source is usable after the store");
        assertArrayEquals(content, content().read(target), "a change of the source does not reach what was stored");
    }

    @Test
    void aStoreOnAParentHoldsTheNewContentAndDependsOnIt() throws IOException {
        Path source = source();
        StoredArtifact first = strategy().store(kind(), source, null, dir.resolve("first"), operation());
        content().fill(source, CHANGE, CHANGE, (byte) 2);
        Path target = dir.resolve("second");
        StoredArtifact second = strategy().store(kind(), source, first, target, operation());
        assertResult(second, target);
        if (second.parent() != null) {
            assertEquals(first, second.parent(), "stored on the parent it was given, if on any");
        }
        assertArrayEquals(changed((byte) 2), content().read(target));
        assertArrayEquals(content, content().read(first.path()), "the parent is unchanged");
        strategy().verify(second);
    }

    @Test
    void aMaterialisedArtifactIsWritableWithoutChangingTheStoredOne() throws IOException {
        StoredArtifact stored = strategy().store(kind(), source(), null, dir.resolve("stored"), operation());
        Object before = content().state(stored.path());
        Path target = dir.resolve("instance");
        StoredArtifact live = strategy().materialise(stored, target, operation());
        assertResult(live, target);
        assertArrayEquals(content, content().read(target));

        content().fill(target, CHANGE, CHANGE, (byte) 3);
        assertArrayEquals(changed((byte) 3), content().read(target), "an instance writes its own copy");
        assertArrayEquals(content, content().read(stored.path()), "and never the stored one");
        assertEquals(before, content().state(stored.path()));
        StoredArtifact second = strategy().materialise(stored, dir.resolve("instance2"), operation());
        assertArrayEquals(content, content().read(second.path()), "each instance starts from the stored content");
    }

    @Test
    void aCompactedArtifactStandsAloneOnceTheChainIsGone() throws IOException {
        Path source = source();
        StoredArtifact first = strategy().store(kind(), source, null, dir.resolve("first"), operation());
        content().fill(source, CHANGE, CHANGE, (byte) 4);
        StoredArtifact second = strategy().store(kind(), source, first, dir.resolve("second"), operation());
        Path target = dir.resolve("compact");
        StoredArtifact compact = strategy().compact(second, target, operation());
        assertResult(compact, target);
        assertEquals(0, compact.depth(), "a compacted artifact is depth 0");
        assertEquals(null, compact.parent());
        assertArrayEquals(changed((byte) 4), content().read(second.path()), "the chain stays");

        strategy().delete(second);
        strategy().delete(first);
        deleteAll(source);
        assertArrayEquals(changed((byte) 4), content().read(target), "it needs nothing of the chain");
        strategy().verify(compact);
    }

    @Test
    void deleteRemovesTheArtifactsOwnFilesOnlyAndTwiceIsFine() throws IOException {
        Path source = source();
        StoredArtifact first = strategy().store(kind(), source, null, dir.resolve("first"), operation());
        Object firstBefore = content().state(first.path());
        StoredArtifact second = strategy().store(kind(), source, first, dir.resolve("second"), operation());
        StoredArtifact live = strategy().materialise(second, dir.resolve("instance"), operation());
        Set<String> others = names(Set.of("instance"));

        strategy().delete(live);
        assertFalse(Files.exists(live.path()), "delete removes the artifact");
        assertEquals(others, names(Set.of()), "and nothing else");
        strategy().delete(second);
        assertFalse(Files.exists(second.path()));
        assertEquals(firstBefore, content().state(first.path()), "the parent is never touched");
        assertArrayEquals(content, content().read(first.path()));
        strategy().delete(second);
        strategy().verify(first);
    }

    @Test
    void verifyNamesAMissingParent() throws IOException {
        Path source = source();
        StoredArtifact first = strategy().store(kind(), source, null, dir.resolve("first"), operation());
        StoredArtifact second = strategy().store(kind(), source, first, dir.resolve("second"), operation());
        Assumptions.assumeTrue(second.parent() != null, "this strategy stores standalone artifacts");
        strategy().delete(first);
        IOException e = assertThrows(IOException.class, () -> strategy().verify(second));
        assertNotNull(e.getMessage());
    }

    /**
     * Three stores, each on the one before with a change of its own: every link holds its own
     * content, a materialise and a compaction of the top hold the top's, and where the strategy
     * keeps content hashes they name that content wherever it is.
     */
    @Test
    void aChainOfThreeHoldsEachLinksContent() throws IOException {
        Path source = source();
        StoredArtifact link = strategy().store(kind(), source, null, dir.resolve("link0"), operation());
        List<StoredArtifact> links = new java.util.ArrayList<>(List.of(link));
        List<byte[]> contents = new java.util.ArrayList<>(List.of(content.clone()));
        byte[] expected = content.clone();
        for (int d = 1; d <= 3; d++) {
            content().fill(source, (2L * d - 1) * CHANGE, CHANGE, (byte) (10 + d));
            Arrays.fill(expected, (2 * d - 1) * CHANGE, 2 * d * CHANGE, (byte) (10 + d));
            Path target = dir.resolve("link" + d);
            link = strategy().store(kind(), source, link, target, operation());
            assertResult(link, target);
            links.add(link);
            contents.add(expected.clone());
        }
        for (int d = 0; d <= 3; d++) {
            assertArrayEquals(contents.get(d), content().read(links.get(d).path()), "link " + d + " holds its own content");
        }
        StoredArtifact top = links.getLast();
        StoredArtifact live = strategy().materialise(top, dir.resolve("instance"), operation());
        assertArrayEquals(expected, content().read(live.path()));
        StoredArtifact compact = strategy().compact(top, dir.resolve("compact"), operation());
        assertArrayEquals(expected, content().read(compact.path()));
        if (top.contentHash() != null) {
            assertEquals(top.contentHash(), live.contentHash(), "a materialised copy stands for the same content");
            assertEquals(top.contentHash(), compact.contentHash(), "and so does a compaction");
            assertFalse(top.contentHash().equals(links.getFirst().contentHash()), "a changed content has another hash");
        }
    }

    /** Forks of N: materialises of one chain from several threads at once each get the whole content. */
    @Test
    void materialisesOfOneChainAtOnceEachGetItsContent() throws Exception {
        Path source = source();
        StoredArtifact first = strategy().store(kind(), source, null, dir.resolve("first"), operation());
        content().fill(source, CHANGE, CHANGE, (byte) 6);
        StoredArtifact second = strategy().store(kind(), source, first, dir.resolve("second"), operation());
        int n = 4;
        List<CompletableFuture<StoredArtifact>> forks = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            Path target = dir.resolve("fork" + i);
            forks.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return strategy().materialise(second, target, operation());
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }));
        }
        for (CompletableFuture<StoredArtifact> f : forks) {
            assertArrayEquals(changed((byte) 6), content().read(f.get().path()));
        }
    }

    /**
     * Where a strategy keeps content hashes, a parent changed in place after a chain on it was
     * used (and, by a strategy that remembers what it verified, remembered) is refused at the next
     * materialise; a strategy without hashes skips this.
     */
    @Test
    void aParentChangedInPlaceIsRefusedWhereContentIsHashed() throws IOException {
        Path source = source();
        StoredArtifact first = strategy().store(kind(), source, null, dir.resolve("first"), operation());
        Assumptions.assumeTrue(first.contentHash() != null, () -> strategy().name() + " keeps no content hashes");
        content().fill(source, CHANGE, CHANGE, (byte) 7);
        StoredArtifact second = strategy().store(kind(), source, first, dir.resolve("second"), operation());
        Assumptions.assumeTrue(second.parent() != null, "this strategy stores standalone artifacts");
        strategy().materialise(second, dir.resolve("before"), operation());

        content().fill(first.path(), 0, CHANGE, (byte) 8);
        Set<String> before = names(Set.of());
        IOException e = assertThrows(IOException.class,
                () -> strategy().materialise(second, dir.resolve("after"), operation()));
        assertNotNull(e.getMessage());
        assertEquals(before, names(Set.of()), "a refused materialise leaves nothing");
    }

    /**
     * A store from a missing source, or a call cancelled after each of its steps, leaves no file; a
     * call cancelled before its first step does not run.
     */
    @Test
    void aCallThatThrowsLeavesNothingBehind() throws IOException {
        Path missing = dir.resolve("missing");
        Set<String> before = names(Set.of());
        assertThrows(IOException.class, () -> strategy().store(kind(), missing, null, dir.resolve("t"), operation()));
        assertEquals(before, names(Set.of()), "a store of a missing source leaves nothing");

        Path source = source();
        StoredArtifact stored = strategy().store(kind(), source, null, dir.resolve("stored"), operation());
        Set<String> baseline = names(Set.of());
        for (int steps = 0; steps < 8; steps++) {
            CancelAfter context = new CancelAfter(steps);
            Path target = dir.resolve("cut" + steps);
            StoredArtifact made = null;
            try {
                made = switch (steps % 3) {
                    case 0 -> strategy().store(kind(), source, null, target, context);
                    case 1 -> strategy().materialise(stored, target, context);
                    default -> strategy().compact(stored, target, context);
                };
            } catch (ApiException | IOException e) {
                assertEquals(baseline, names(Set.of()), "a call cancelled after " + steps + " steps left files behind");
            }
            if (made != null) {
                assertTrue(steps > 0, "a call cancelled before it started ran anyway");
                strategy().delete(made); // it finished before the cancellation could land
            }
        }
    }

    /** While a store runs, its target is absent or whole: never seen growing. */
    @Test
    void theTargetAppearsWholeOrNotAtAll() throws Exception {
        Path source = source();
        Path target = dir.resolve("stored");
        CompletableFuture<StoredArtifact> store = CompletableFuture.supplyAsync(() -> {
            try {
                return strategy().store(kind(), source, null, target, operation());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        Set<Long> sizes = new TreeSet<>();
        while (!store.isDone()) {
            sizeOf(target, sizes);
            Thread.onSpinWait();
        }
        StoredArtifact stored = store.get();
        long size = sizeOf(target, new TreeSet<>());
        sizes.remove(size);
        assertTrue(sizes.isEmpty(), () -> "the target was seen at " + sizes + " bytes before it was whole (" + size + ")");
        assertArrayEquals(content, content().read(stored.path()));
        assertEquals(Set.of("source", "stored"), names(Set.of()), "nothing is left beside it");
    }

    private static long sizeOf(Path path, Set<Long> sizes) throws IOException {
        // existence first: a target that appears between the walk and the check would read as 0 bytes
        boolean existed = Files.exists(path);
        try (Stream<Path> files = Files.isDirectory(path) ? Files.walk(path) : Stream.of(path)) {
            long total = files.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    return 0;
                }
            }).sum();
            if (existed) {
                sizes.add(total);
            }
            return total;
        } catch (UncheckedIOException | NoSuchFileException e) {
            return 0;
        }
    }

    /** Deletes a file, or a folder and all below it. */
    private static void deleteAll(Path path) throws IOException {
        try (Stream<Path> all = Files.walk(path)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    /** The names in the test directory, hidden ones included, but for {@code except}. */
    private Set<String> names(Set<String> except) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).filter(n -> !except.contains(n))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    /** A context cancelled once the strategy has reported {@code steps} steps. */
    private static final class CancelAfter implements OperationContext {
        private final int steps;
        private final AtomicInteger seen = new AtomicInteger();
        private final Instant deadline = Instant.now().plus(PATIENCE);

        CancelAfter(int steps) {
            this.steps = steps;
        }

        @Override
        public Instant deadline() {
            return deadline;
        }

        @Override
        public boolean cancelled() {
            return seen.get() >= steps;
        }

        @Override
        public void progress(String step, double fraction) {
            seen.incrementAndGet();
        }
    }
}
