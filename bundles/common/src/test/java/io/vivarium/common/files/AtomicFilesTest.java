package io.vivarium.common.files;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AtomicFilesTest {

    @TempDir
    Path dir;

    /**
     * What the helper did, in order: "open X", "write N", "force X, target holds Y" (X: "temp" or
     * "dir"; Y: what the target holds at that moment, i.e. what a crash then would leave).
     */
    final List<String> events = new ArrayList<>();

    /** Channels that take at most 3 bytes per write and record every write and force. */
    final AtomicFiles recorded = new AtomicFiles(this::open);

    private FileChannel open(Path path, OpenOption... options) throws IOException {
        String what = Files.isDirectory(path) ? "dir" : "temp";
        events.add("open " + what);
        return new Recording(FileChannel.open(path, options), what);
    }

    @Test
    void shortWritesAreContinuedUntilEveryByteIsWritten() throws IOException {
        byte[] content = "a record longer than one short write\n".getBytes(StandardCharsets.UTF_8);
        Path target = dir.resolve("sandbox.json");
        recorded.replace(target, content, true);
        assertArrayEquals(content, Files.readAllBytes(target));
        long writes = events.stream().filter(e -> e.startsWith("write")).count();
        assertEquals((content.length + 2) / 3, writes, events.toString());
    }

    @Test
    void theTempFileIsForcedBeforeTheRenameAndTheDirectoryAfterIt() throws IOException {
        Path target = dir.resolve("features.json");
        Files.writeString(target, "old");
        recorded.replace(target, "new".getBytes(StandardCharsets.UTF_8), true);
        List<String> syncs = events.stream().filter(e -> e.startsWith("force") || e.startsWith("open")).toList();
        assertEquals(List.of("open temp", "force temp, target holds old", "open dir", "force dir, target holds new"), syncs);
        assertEquals("new", Files.readString(target));
        assertEquals(List.of(target), listing(), "no temporary file is left");
    }

    @Test
    void withoutSyncTheSameRenameHappensAndNothingIsForced() throws IOException {
        Path target = dir.resolve("sandbox.json");
        Files.writeString(target, "old");
        recorded.replace(target, "new".getBytes(StandardCharsets.UTF_8), false);
        assertEquals(List.of("open temp"), events.stream().filter(e -> e.startsWith("force") || e.startsWith("open")).toList());
        assertEquals("new", Files.readString(target));
        assertEquals(List.of(target), listing(), "no temporary file is left");
    }

    @Test
    void aFailedWriteLeavesTheOldContentAndNoTemporaryFile() throws IOException {
        Path target = dir.resolve("record");
        Files.writeString(target, "old");
        AtomicFiles failing = new AtomicFiles((path, options) -> {
            throw new IOException("disk full");
        });
        assertThrows(IOException.class, () -> failing.replace(target, "new".getBytes(StandardCharsets.UTF_8), true));
        assertEquals("old", Files.readString(target));
        assertEquals(List.of(target), listing());
    }

    @Test
    void createIfAbsentKeepsAnExistingFileAndSetsTheModeOfANewOne() throws IOException {
        Path target = dir.resolve("tokens");
        assertTrue(AtomicFiles.createIfAbsent(target, "first".getBytes(StandardCharsets.UTF_8),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))));
        assertFalse(AtomicFiles.createIfAbsent(target, "second".getBytes(StandardCharsets.UTF_8)));
        assertEquals("first", Files.readString(target));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(target)));
        assertEquals(List.of(target), listing());
    }

    @Test
    void createIfAbsentAndDeleteForceTheDirectory() throws IOException {
        Path target = dir.resolve("plugin.jar");
        assertTrue(recorded.create(target, new byte[] {1, 2}));
        assertEquals("force dir, target holds \u0001\u0002", events.get(events.size() - 1));
        events.clear();
        assertTrue(recorded.remove(target));
        assertEquals(List.of("open dir", "force dir, target holds nothing"), events);
        assertFalse(recorded.remove(target));
    }

    @Test
    void aMissingFolderIsAnError() {
        assertThrows(NoSuchFileException.class,
                () -> AtomicFiles.write(dir.resolve("missing").resolve("f"), new byte[] {1}));
    }

    private List<Path> listing() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }

    /** The single file the tests write, read when a force happens: what a crash at that moment would leave. */
    private String targetNow() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> visible = s.filter(p -> !p.getFileName().toString().startsWith(".")).toList();
            return visible.isEmpty() ? "nothing" : Files.readString(visible.get(0));
        }
    }

    /** A FileChannel that writes at most 3 bytes per call and records writes and forces. */
    private final class Recording extends FileChannel {
        private final FileChannel inner;
        private final String what;

        Recording(FileChannel inner, String what) {
            this.inner = inner;
            this.what = what;
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            ByteBuffer slice = src.slice();
            slice.limit(Math.min(3, slice.remaining()));
            int n = inner.write(slice);
            src.position(src.position() + n);
            events.add("write " + n);
            return n;
        }

        @Override
        public void force(boolean metaData) throws IOException {
            inner.force(metaData);
            events.add("force " + what + ", target holds " + targetNow());
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            return inner.read(dst);
        }

        @Override
        public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
            return inner.read(dsts, offset, length);
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long position() throws IOException {
            return inner.position();
        }

        @Override
        public FileChannel position(long newPosition) throws IOException {
            inner.position(newPosition);
            return this;
        }

        @Override
        public long size() throws IOException {
            return inner.size();
        }

        @Override
        public FileChannel truncate(long size) throws IOException {
            inner.truncate(size);
            return this;
        }

        @Override
        public long transferTo(long position, long count, WritableByteChannel target) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long transferFrom(ReadableByteChannel src, long position, long count) {
            throw new UnsupportedOperationException();
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            return inner.read(dst, position);
        }

        @Override
        public int write(ByteBuffer src, long position) {
            throw new UnsupportedOperationException();
        }

        @Override
        public MappedByteBuffer map(MapMode mode, long position, long size) {
            throw new UnsupportedOperationException();
        }

        @Override
        public FileLock lock(long position, long size, boolean shared) {
            throw new UnsupportedOperationException();
        }

        @Override
        public FileLock tryLock(long position, long size, boolean shared) {
            throw new UnsupportedOperationException();
        }

        @Override
        protected void implCloseChannel() throws IOException {
            inner.close();
        }
    }
}
