package io.vivarium.storage.diffchain.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the conformance suite does not check: the on-disk format refuses what a crash or a tamper
 * leaves (truncation, a parent that is not the one a link was made from, page numbers outside the
 * image), verified links are remembered until their file changes, concurrent materialises of one
 * chain read each link once, and when a store is written standalone instead of as a diff.
 */
class DiffChainTest {

    private static final int PAGES = 1024;
    private static final int SIZE = PAGES * DiffFile.PAGE;

    @TempDir
    Path dir;

    private DiffChainStorage storage;
    private byte[] content;
    private Path source;

    static OperationContext operation() {
        return OperationContext.until(Instant.now().plus(Duration.ofMinutes(1)));
    }

    @BeforeEach
    void source() throws IOException {
        storage = new DiffChainStorage(16, Duration.ZERO);
        content = new byte[SIZE];
        new Random(7).nextBytes(content);
        source = Files.write(dir.resolve("ram"), content);
    }

    /** Changes {@code pages} pages of the source (and the expected content) from page {@code first}, every third. */
    private void dirty(int first, int pages, byte value) throws IOException {
        try (FileChannel ch = FileChannel.open(source, StandardOpenOption.WRITE)) {
            for (int i = 0; i < pages; i++) {
                long at = (long) (first + 3 * i) * DiffFile.PAGE;
                java.util.Arrays.fill(content, (int) at, (int) at + DiffFile.PAGE, value);
                ch.write(ByteBuffer.wrap(content, (int) at, DiffFile.PAGE), at);
            }
        }
    }

    /** A chain of depth 3 on a plain root; returns its top. */
    private StoredArtifact depthThree() throws IOException {
        StoredArtifact link = storage.store(ArtifactKind.MEMORY, source, null, dir.resolve("l0"), operation());
        for (int d = 1; d <= 3; d++) {
            dirty(10 * d, 5, (byte) d);
            link = storage.store(ArtifactKind.MEMORY, source, link, dir.resolve("l" + d), operation());
        }
        return link;
    }

    private byte[] materialised(StoredArtifact stored, String name) throws IOException {
        return Files.readAllBytes(storage.materialise(stored, dir.resolve(name), operation()).path());
    }

    @Test
    void aDiffHoldsOnlyTheChangedPagesAndAMaterialiseWritesOnlyThose() throws IOException {
        StoredArtifact base = storage.store(ArtifactKind.MEMORY, source, null, dir.resolve("base"), operation());
        dirty(100, 3, (byte) 1);
        StoredArtifact diff = storage.store(ArtifactKind.MEMORY, source, base, dir.resolve("diff"), operation());
        assertEquals(DiffChainStorage.MODE_DIFF, diff.mode());
        assertEquals(1, diff.depth());
        assertEquals(DiffFile.HEADER + 3L * (DiffFile.PAGE + Long.BYTES), Files.size(diff.path()));
        assertEquals(Files.size(diff.path()), diff.bytesWritten());

        StoredArtifact live = storage.materialise(diff, dir.resolve("live"), operation());
        assertArrayEquals(content, Files.readAllBytes(live.path()));
        assertEquals(diff.contentHash(), live.contentHash(), "the content it stands for");
        assertNull(live.parent());
        long copied = live.mode().equals("copy") ? SIZE : 0;
        assertEquals(copied + 3 * DiffFile.PAGE, live.bytesWritten(), "the root's copy (if not cloned) and three pages");
    }

    @Test
    void aChainMaterialisesAndCompactsToTheTopsContent() throws IOException {
        StoredArtifact top = depthThree();
        assertEquals(3, top.depth());
        assertArrayEquals(content, materialised(top, "live"));
        StoredArtifact flat = storage.compact(top, dir.resolve("flat"), operation());
        assertEquals(0, flat.depth());
        assertEquals(top.contentHash(), flat.contentHash());
        assertArrayEquals(content, Files.readAllBytes(flat.path()));
        // handed over as core records it: path and mode only, the chain found from the files
        StoredArtifact bare = new StoredArtifact(ArtifactKind.MEMORY, top.path(), top.mode(), 0, null, null, 0);
        assertArrayEquals(content, materialised(bare, "live2"));
    }

    @Test
    void aTruncatedLinkIsRefused() throws IOException {
        StoredArtifact top = depthThree();
        truncate(top.path(), Files.size(top.path()) - 8);
        assertRefused(top, "truncated or extended");
        truncate(top.path(), 100);
        assertRefused(top, "truncated: 100 bytes");
    }

    @Test
    void aParentThatIsNotTheOneALinkWasMadeFromIsRefused() throws IOException {
        StoredArtifact top = depthThree();
        Path root = dir.resolve("l0");
        byte[] other = Files.readAllBytes(root);
        other[5] ^= 1;
        Files.delete(root);
        Files.write(root, other);
        IOException e = assertRefused(top, "does not hold the content its child");
        assertTrue(e.getMessage().contains("link 4 (" + root), e.getMessage());
    }

    @Test
    void aDamagedHeaderOrBodyIsRefused() throws IOException {
        StoredArtifact top = depthThree();
        flipByte(top.path(), 80); // the parent hash, under the header hash
        assertRefused(top, "damaged header");
        flipByte(top.path(), 80);
        flipByte(top.path(), DiffFile.HEADER + 17); // a stored page
        assertRefused(top, "is damaged: its pages or index");
    }

    @Test
    void pageNumbersOutsideTheImageOrOutOfOrderAreRefused() throws IOException {
        StoredArtifact base = storage.store(ArtifactKind.MEMORY, source, null, dir.resolve("base"), operation());
        Path outside = craft("outside", base, new long[] { 3, PAGES });
        assertRefused(new StoredArtifact(ArtifactKind.MEMORY, outside, "diff", 0, null, null, 0),
                "page index entry 1 is page " + PAGES + ", outside the image's " + PAGES + " pages");
        Path backwards = craft("backwards", base, new long[] { 9, 4 });
        assertRefused(new StoredArtifact(ArtifactKind.MEMORY, backwards, "diff", 0, null, null, 0),
                "page index entry 1 (page 4) does not follow entry 0 (page 9)");
        Path fine = craft("fine", base, new long[] { 4, 9 });
        storage.verify(new StoredArtifact(ArtifactKind.MEMORY, fine, "diff", 0, null, null, 0));
    }

    @Test
    void aNewerFormatVersionAndAnAbsoluteParentAreRefused() throws IOException {
        StoredArtifact base = storage.store(ArtifactKind.MEMORY, source, null, dir.resolve("base"), operation());
        Path link = craft("abs", base, new long[] { 1 });
        rewriteHeader(link, h -> new DiffFile.Header(h.size(), h.pages(), h.depth(), h.parentKind(),
                base.path().toString(), h.contentHash(), h.parentHash(), h.bodyHash()), -1);
        assertRefused(new StoredArtifact(ArtifactKind.MEMORY, link, "diff", 0, null, null, 0), "absolute path");
        rewriteHeader(link, h -> h, 2);
        assertRefused(new StoredArtifact(ArtifactKind.MEMORY, link, "diff", 0, null, null, 0),
                "format version 2; this storage-diffchain reads version 1");
    }

    @Test
    void aVerifiedChainIsNotReadAgainUntilALinkChanges() throws IOException {
        StoredArtifact top = depthThree();
        storage = new DiffChainStorage(16, Duration.ZERO); // nothing remembered, as after a restart
        int before = storage.filesHashed();
        assertArrayEquals(content, materialised(top, "a"));
        assertEquals(4, storage.filesHashed() - before, "three links and the root are read once");
        assertArrayEquals(content, materialised(top, "b"));
        assertEquals(4, storage.filesHashed() - before, "and remembered");

        Files.setLastModifiedTime(dir.resolve("l1"), FileTime.from(Instant.now().minusSeconds(60)));
        assertArrayEquals(content, materialised(top, "c"));
        assertEquals(5, storage.filesHashed() - before, "a touched link is read again (and still good)");

        flipByte(dir.resolve("l0"), 12345);
        assertRefused(top, "link 4 (" + dir.resolve("l0"));
        flipByte(dir.resolve("l0"), 12345);
        flipByte(dir.resolve("l2"), DiffFile.HEADER + 1);
        assertRefused(top, dir.resolve("l2") + " is damaged");
    }

    @Test
    void aFileChangedJustBeforeItsCheckIsCheckedAgainNextTime() throws IOException {
        storage = new DiffChainStorage(16, Duration.ofHours(1));
        StoredArtifact top = depthThree();
        int before = storage.filesHashed();
        materialised(top, "a");
        materialised(top, "b");
        assertEquals(8, storage.filesHashed() - before, "nothing was old enough to be remembered");
    }

    @Test
    void forksOfOneChainAtOnceAgreeAndReadEachLinkOnce() throws Exception {
        StoredArtifact top = depthThree();
        storage = new DiffChainStorage(16, Duration.ZERO); // nothing remembered, as after a restart
        int before = storage.filesHashed();
        int n = 8;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<byte[]>> forks = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                String name = "fork" + i;
                forks.add(pool.submit(() -> {
                    Bounded.await(start, Duration.ofSeconds(60), "the forks' start signal");
                    return materialised(top, name);
                }));
            }
            start.countDown();
            for (Future<byte[]> f : forks) {
                assertArrayEquals(content, f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(4, storage.filesHashed() - before, "each of the chain's four files was read once");
    }

    @Test
    void aStoreIsStandaloneWhenTheSizeDiffersOrTheChainIsDeepEnough() throws IOException {
        storage = new DiffChainStorage(2, Duration.ZERO);
        StoredArtifact base = storage.store(ArtifactKind.MEMORY, source, null, dir.resolve("base"), operation());
        StoredArtifact one = storage.store(ArtifactKind.MEMORY, source, base, dir.resolve("one"), operation());
        StoredArtifact two = storage.store(ArtifactKind.MEMORY, source, one, dir.resolve("two"), operation());
        assertEquals(2, two.depth());
        StoredArtifact three = storage.store(ArtifactKind.MEMORY, source, two, dir.resolve("three"), operation());
        assertEquals(0, three.depth(), "max_chain_depth 2");
        assertNull(three.parent());

        Files.write(source, new byte[SIZE * 2]);
        StoredArtifact bigger = storage.store(ArtifactKind.MEMORY, source, base, dir.resolve("bigger"), operation());
        assertEquals(0, bigger.depth());
        assertEquals(SIZE * 2L, Files.size(bigger.path()));
    }

    @Test
    void aRecordedParentThatIsNotTheChainsIsRefused() throws IOException {
        StoredArtifact base = storage.store(ArtifactKind.MEMORY, source, null, dir.resolve("base"), operation());
        StoredArtifact other = storage.store(ArtifactKind.MEMORY, source, null, dir.resolve("other"), operation());
        StoredArtifact diff = storage.store(ArtifactKind.MEMORY, source, base, dir.resolve("diff"), operation());
        StoredArtifact lying = new StoredArtifact(ArtifactKind.MEMORY, diff.path(), "diff", 0, null, other, 1);
        assertRefused(lying, "not the recorded " + other.path());
    }

    // ---- helpers ----------------------------------------------------------------------------------

    private IOException assertRefused(StoredArtifact stored, String why) {
        IOException e = assertThrows(IOException.class, () -> storage.materialise(stored, dir.resolve("refused"),
                operation()));
        assertTrue(e.getMessage().contains(why), () -> "expected \"" + why + "\" in: " + e.getMessage());
        assertTrue(!Files.exists(dir.resolve("refused")), "a refused materialise leaves nothing");
        return e;
    }

    /** A diff link on {@code base} holding the pages {@code index} names (zero pages), with good hashes. */
    private Path craft(String name, StoredArtifact base, long[] index) throws IOException {
        Path path = dir.resolve(name);
        ByteBuffer body = ByteBuffer.allocate(index.length * (DiffFile.PAGE + Long.BYTES));
        body.position(index.length * DiffFile.PAGE);
        for (long page : index) {
            body.putLong(page);
        }
        byte[] bodyHash = DiffFile.sha256().digest(body.array());
        byte[] baseHash = java.util.HexFormat.of().parseHex(base.contentHash());
        DiffFile.Header h = new DiffFile.Header(SIZE, index.length, 1, DiffFile.PARENT_FILE,
                base.path().getFileName().toString(), new byte[32], baseHash, bodyHash);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            DiffFile.writeFully(ch, h.encode(), 0);
            DiffFile.writeFully(ch, body.flip(), DiffFile.HEADER);
        }
        return path;
    }

    /** Rewrites the header of {@code path} through {@code change}, with a fresh header hash; {@code version} if not -1. */
    private static void rewriteHeader(Path path, java.util.function.UnaryOperator<DiffFile.Header> change, int version)
            throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            DiffFile.Header h = change.apply(DiffFile.read(ch, path));
            ByteBuffer b = h.encode();
            if (version != -1) {
                b.putInt(8, version);
                b.put(DiffFile.HEADER - DiffFile.HASH,
                        DiffFile.sha256().digest(java.util.Arrays.copyOf(b.array(), DiffFile.HEADER - DiffFile.HASH)));
            }
            DiffFile.writeFully(ch, b, 0);
        }
    }

    private static void truncate(Path path, long length) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
            f.setLength(length);
        }
    }

    private static void flipByte(Path path, long at) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0x40);
        }
    }
}
