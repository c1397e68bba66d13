package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The pages a QEMU wrote into a file it maps privately ({@code share=off}): a forked child's RAM.
 * Each page of the mapping it has not written is still the file's (not present, or present as a
 * page of the file); one it wrote is an anonymous copy, which {@code /proc/PID/pagemap} shows as
 * present (bit 63) and not a file page (bit 61), or swapped (bit 62). Read while QEMU is stopped,
 * from {@code /proc/PID/mem}; so the guest's RAM is the file with these pages written over it.
 * Needs the right to trace QEMU (a root daemon).
 */
final class DirtyPages {

    static final int PAGE = 4096;
    private static final long PRESENT = 1L << 63;
    private static final long SWAPPED = 1L << 62;
    private static final long FILE_PAGE = 1L << 61;

    private final List<Long> offsets;
    private final ByteBuffer content;

    private DirtyPages(List<Long> offsets, ByteBuffer content) {
        this.offsets = offsets;
        this.content = content;
    }

    /** The pages process {@code pid} wrote into its private mapping of {@code file}. */
    static DirtyPages read(long pid, Path file) throws IOException {
        Mapping m = mapping(pid, file);
        int pages = Math.toIntExact(m.length() / PAGE);
        ByteBuffer entries = ByteBuffer.allocate(pages * 8).order(ByteOrder.nativeOrder());
        try (FileChannel pagemap = FileChannel.open(Path.of("/proc", Long.toString(pid), "pagemap"))) {
            readFully(pagemap, entries, m.start() / PAGE * 8);
        }
        entries.flip();
        List<Long> offsets = new ArrayList<>();
        for (int i = 0; i < pages; i++) {
            long e = entries.getLong(i * 8);
            if ((e & PRESENT) != 0 && (e & FILE_PAGE) == 0 || (e & SWAPPED) != 0) {
                offsets.add(m.offset() + (long) i * PAGE);
            }
        }
        ByteBuffer content = ByteBuffer.allocate(Math.multiplyExact(offsets.size(), PAGE));
        try (FileChannel mem = FileChannel.open(Path.of("/proc", Long.toString(pid), "mem"))) {
            // one read per run of adjacent pages
            for (int i = 0, j; i < offsets.size(); i = j) {
                for (j = i + 1; j < offsets.size() && offsets.get(j) == offsets.get(j - 1) + PAGE; j++) {
                    // extends the run
                }
                content.limit(content.position() + (j - i) * PAGE);
                readFully(mem, content, m.start() + offsets.get(i) - m.offset());
            }
        }
        content.flip();
        return new DirtyPages(offsets, content);
    }

    int count() {
        return offsets.size();
    }

    /** Writes the pages over {@code flat} (a copy of the mapped file) at their offsets. */
    void writeOver(Path flat) throws IOException {
        try (FileChannel out = FileChannel.open(flat, StandardOpenOption.WRITE)) {
            for (int i = 0; i < offsets.size(); i++) {
                ByteBuffer page = content.duplicate().position(i * PAGE).limit((i + 1) * PAGE);
                long at = offsets.get(i);
                while (page.hasRemaining()) {
                    at += out.write(page, at);
                }
            }
            out.force(true);
        }
    }

    private record Mapping(long start, long length, long offset) {
    }

    /** The one mapping of {@code file} in the process's address space (QEMU maps its RAM once). */
    private static Mapping mapping(long pid, Path file) throws IOException {
        String wanted = file.toRealPath().toString();
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "maps"))) {
            String[] f = line.trim().split("\\s+", 6);
            if (f.length == 6 && f[5].equals(wanted)) {
                String[] range = f[0].split("-");
                long start = Long.parseUnsignedLong(range[0], 16);
                return new Mapping(start, Long.parseUnsignedLong(range[1], 16) - start, Long.parseUnsignedLong(f[2], 16));
            }
        }
        throw new IOException("QEMU (pid " + pid + ") does not map " + wanted);
    }

    private static void readFully(FileChannel channel, ByteBuffer into, long position) throws IOException {
        while (into.hasRemaining()) {
            int n = channel.read(into, position);
            if (n < 0) {
                throw new IOException("unexpected end of " + channel + " at " + position);
            }
            position += n;
        }
    }
}
