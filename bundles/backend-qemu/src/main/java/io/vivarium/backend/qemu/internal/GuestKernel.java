package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * An image's {@code vmlinux} as the PVH loader needs it (guest-agent/boot/pvh-loader.c): its load
 * segments, which the backend writes into a new guest's RAM file at their physical addresses before
 * QEMU starts, and a boot block at {@link #BOOT_BLOCK} naming its PVH entry, where the loader finds
 * it. QEMU then holds the kernel nowhere: an ELF {@code -kernel}'s segments would be ROM blobs that
 * every system reset (each {@code loadvm}) writes back into guest RAM, and an fw_cfg file holding it
 * would sit whole in every QEMU's heap (measured: 52 MiB more anonymous memory per VM). The file
 * comes from our own image build; it is still read with bounds.
 *
 * @param segments the {@code PT_LOAD} segments, in file order
 * @param entry the physical address of the kernel's 32-bit PVH entry ({@code XEN_ELFNOTE_PHYS32_ENTRY})
 */
record GuestKernel(Path file, List<Segment> segments, long entry) {

    /** A {@code PT_LOAD} segment: {@code fileSize} bytes at {@code offset} go to {@code physical}, zeros up to {@code memorySize}. */
    record Segment(long offset, long physical, long fileSize, long memorySize) {
    }

    /** Guest physical address of the boot block: past the loader (pvh-loader.ld asserts it), below the kernel. */
    static final long BOOT_BLOCK = 0x110000;
    private static final byte[] MAGIC = "VIVKERN1".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final int HEADER_BYTES = 4096;
    private static final byte[] ZEROS = new byte[1 << 20];
    private static final int PT_LOAD = 1;
    private static final int PT_NOTE = 4;
    private static final int EM_X86_64 = 62;
    private static final int XEN_ELFNOTE_PHYS32_ENTRY = 18;
    private static final int MAX_NOTES_BYTES = 1 << 16;

    static GuestKernel read(Path vmlinux) throws IOException {
        try (FileChannel in = FileChannel.open(vmlinux, StandardOpenOption.READ)) {
            long size = in.size();
            ByteBuffer header = read(in, 0, (int) Math.min(HEADER_BYTES, size));
            if (header.limit() < 64 || header.getInt(0) != 0x464c457f || header.get(4) != 2 || header.get(5) != 1
                    || Short.toUnsignedInt(header.getShort(18)) != EM_X86_64) {
                throw new IOException(vmlinux + " is not a little-endian x86-64 ELF (a vmlinux)");
            }
            long phoff = header.getLong(32);
            int phentsize = Short.toUnsignedInt(header.getShort(54));
            int phnum = Short.toUnsignedInt(header.getShort(56));
            if (phentsize != 56 || phoff < 64 || phoff > header.limit() || (long) phnum * phentsize > header.limit() - phoff) {
                throw new IOException(vmlinux + ": unexpected program headers");
            }
            List<Segment> segments = new ArrayList<>();
            long entry = 0;
            for (int i = 0; i < phnum; i++) {
                int at = (int) phoff + i * phentsize;
                int type = header.getInt(at);
                long offset = header.getLong(at + 8);
                long physical = header.getLong(at + 24);
                long fileSize = header.getLong(at + 32);
                long memorySize = header.getLong(at + 40);
                if (offset < 0 || fileSize < 0 || offset > size || fileSize > size - offset || fileSize > memorySize
                        || physical < 0 || memorySize > Long.MAX_VALUE - physical) {
                    throw new IOException(vmlinux + ": program header " + i + " lies outside the file");
                }
                if (type == PT_LOAD && memorySize > 0) {
                    segments.add(new Segment(offset, physical, fileSize, memorySize));
                } else if (type == PT_NOTE && entry == 0 && fileSize <= MAX_NOTES_BYTES) {
                    entry = pvhEntry(read(in, offset, (int) fileSize));
                }
            }
            if (entry == 0 || segments.isEmpty() || segments.stream().anyMatch(s -> s.physical() < BOOT_BLOCK + 16)) {
                throw new IOException(vmlinux + " has no PVH entry note, no load segment, or one below "
                    + Long.toHexString(BOOT_BLOCK + 16) + " (where the loader and its boot block are)");
            }
            return new GuestKernel(vmlinux, List.copyOf(segments), entry);
        }
    }

    private static ByteBuffer read(FileChannel in, long offset, int length) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining() && in.read(b, offset + b.position()) > 0) {
            // a read may return fewer bytes than asked
        }
        return b.flip();
    }

    private static long pvhEntry(ByteBuffer notes) {
        int at = 0;
        while (at + 12 <= notes.limit()) {
            int nameSize = notes.getInt(at);
            int descSize = notes.getInt(at + 4);
            int type = notes.getInt(at + 8);
            int name = at + 12;
            int desc = name + ((nameSize + 3) & ~3);
            if (nameSize < 0 || nameSize > notes.limit() || descSize < 0 || desc > notes.limit()
                    || descSize > notes.limit() - desc) {
                return 0;
            }
            if (type == XEN_ELFNOTE_PHYS32_ENTRY && nameSize == 4 && notes.get(name) == 'X' && notes.get(name + 1) == 'e'
                    && notes.get(name + 2) == 'n' && descSize >= 4) {
                return Integer.toUnsignedLong(notes.getInt(desc));
            }
            at = desc + ((descSize + 3) & ~3);
        }
        return 0;
    }

    /** Where the kernel ends in guest memory (physical), which the guest's RAM must reach past. */
    long end() {
        return segments.stream().mapToLong(s -> s.physical() + s.memorySize()).max().orElse(0);
    }

    /** Refuses a guest whose {@code ramBytes} of RAM the kernel does not fit in. */
    void checkFits(long ramBytes) throws IOException {
        if (end() > ramBytes) {
            throw new IOException("the kernel needs guest memory up to " + (end() >> 20) + " MiB; give the VM more");
        }
    }

    /**
     * Writes the segments into {@code ram}, the file of a new guest's RAM (its first bytes are guest
     * physical address 0: the kernel lies far below where q35 splits RAM at 2 GiB), the zeros past
     * each segment's file part, and the boot block.
     */
    void placeInto(Path ram, long ramBytes) throws IOException {
        checkFits(ramBytes);
        // through a buffer, not transferTo: copy_file_range would clone the blocks into a RAM file on
        // XFS, undoing the space fallocate reserved for the guest (a write to it could then SIGBUS QEMU)
        ByteBuffer buffer = ByteBuffer.allocate(ZEROS.length);
        try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ);
                FileChannel out = FileChannel.open(ram, StandardOpenOption.WRITE)) {
            for (Segment s : segments) {
                for (long done = 0; done < s.memorySize(); ) {
                    buffer.clear().limit((int) Math.min(buffer.capacity(), s.memorySize() - done));
                    if (done < s.fileSize()) {
                        buffer.limit((int) Math.min(buffer.limit(), s.fileSize() - done));
                        if (in.read(buffer, s.offset() + done) <= 0) {
                            throw new IOException("short read of " + file);
                        }
                    } else {
                        buffer.put(ZEROS, 0, buffer.remaining());
                    }
                    buffer.flip();
                    while (buffer.hasRemaining()) {
                        done += out.write(buffer, s.physical() + done);
                    }
                }
            }
            ByteBuffer block = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).put(MAGIC)
                    .putInt((int) entry).putInt(~(int) entry).flip();
            while (block.hasRemaining()) {
                out.write(block, BOOT_BLOCK + block.position());
            }
        }
    }
}
