package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A vmlinux as the PVH loader needs it, from a small ELF made here (the real one boots in the QEMU tests). */
class GuestKernelTest {

    private static final long TEXT_AT = 0x1000000;
    private static final long DATA_AT = 0x1200000;
    private static final long ENTRY = 0x1000850;

    @TempDir
    Path dir;

    /** An x86-64 ELF with a PVH note and two load segments, the second with 4 KiB of zeros past its file part. */
    private static byte[] vmlinux(int machine, boolean withNote) {
        ByteBuffer b = ByteBuffer.allocate(0x3000).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1});
        b.putShort(16, (short) 2).putShort(18, (short) machine).putInt(20, 1).putLong(24, TEXT_AT);
        b.putLong(32, 64).putShort(52, (short) 64).putShort(54, (short) 56).putShort(56, (short) 3);
        phdr(b, 64, 1, 0x1000, TEXT_AT, 0x800, 0x800);
        phdr(b, 120, 1, 0x2000, DATA_AT, 0x100, 0x1100);
        phdr(b, 176, withNote ? 4 : 6, 0x800, 0, 44, 44);
        // notes at 0x800: a Linux note, then Xen's XEN_ELFNOTE_PHYS32_ENTRY
        b.position(0x800).putInt(6).putInt(4).putInt(1).put("Linux\0\0\0".getBytes(StandardCharsets.US_ASCII)).putInt(7);
        b.putInt(4).putInt(4).putInt(18).put("Xen\0".getBytes(StandardCharsets.US_ASCII)).putInt((int) ENTRY);
        Arrays.fill(b.array(), 0x1000, 0x1800, (byte) 0xc3);
        Arrays.fill(b.array(), 0x2000, 0x2100, (byte) 0x5a);
        return b.array();
    }

    private static void phdr(ByteBuffer b, int at, int type, long offset, long physical, long fileSize, long memorySize) {
        b.putInt(at, type).putLong(at + 8, offset).putLong(at + 16, physical | 0xffffffff80000000L)
                .putLong(at + 24, physical).putLong(at + 32, fileSize).putLong(at + 40, memorySize);
    }

    private Path write(byte[] bytes) throws IOException {
        return Files.write(dir.resolve("kernel"), bytes);
    }

    @Test
    void theSegmentsGoToTheirPhysicalAddressesAndTheBootBlockNamesThePvhEntry() throws Exception {
        GuestKernel kernel = GuestKernel.read(write(vmlinux(62, true)));
        assertEquals(ENTRY, kernel.entry());
        assertEquals(2, kernel.segments().size());
        Path ram = dir.resolve("memory.ram");
        try (RandomAccessFile f = new RandomAccessFile(ram.toFile(), "rw")) {
            f.setLength(64 << 20);
            f.seek(DATA_AT + 0x200);
            f.write(new byte[] {1, 2, 3}); // what a reused RAM file might hold where the segment's zeros go
        }

        kernel.placeInto(ram, 64 << 20);

        try (RandomAccessFile f = new RandomAccessFile(ram.toFile(), "r")) {
            assertArrayEquals(bytes(0x800, (byte) 0xc3), read(f, TEXT_AT, 0x800));
            assertArrayEquals(bytes(0x100, (byte) 0x5a), read(f, DATA_AT, 0x100));
            assertArrayEquals(new byte[0x1000], read(f, DATA_AT + 0x100, 0x1000), "zeros up to the memory size");
            ByteBuffer block = ByteBuffer.wrap(read(f, GuestKernel.BOOT_BLOCK, 16)).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals("VIVKERN1", new String(block.array(), 0, 8, StandardCharsets.US_ASCII));
            assertEquals((int) ENTRY, block.getInt(8));
            assertEquals(~(int) ENTRY, block.getInt(12));
        }
    }

    @Test
    void aKernelThatIsNotAPvhX8664ElfOrDoesNotFitIsRefused() throws Exception {
        assertThrows(IOException.class, () -> GuestKernel.read(write(vmlinux(3, true))), "i386");
        assertThrows(IOException.class, () -> GuestKernel.read(write(vmlinux(62, false))), "no PVH note");
        assertThrows(IOException.class, () -> GuestKernel.read(write(new byte[] {0x7f, 'E', 'L', 'F'})), "truncated");
        byte[] wrapping = vmlinux(62, true);
        ByteBuffer.wrap(wrapping).order(ByteOrder.LITTLE_ENDIAN).putLong(120 + 40, Long.MAX_VALUE - 0x1000);
        assertThrows(IOException.class, () -> GuestKernel.read(write(wrapping)), "a segment whose end wraps around");
        GuestKernel kernel = GuestKernel.read(write(vmlinux(62, true)));
        Path ram = Files.write(dir.resolve("small.ram"), new byte[0]);
        IOException small = assertThrows(IOException.class, () -> kernel.placeInto(ram, 16 << 20));
        assertTrue(small.getMessage().contains("more"), small.getMessage());
    }

    private static byte[] bytes(int n, byte value) {
        byte[] b = new byte[n];
        Arrays.fill(b, value);
        return b;
    }

    private static byte[] read(RandomAccessFile f, long at, int n) throws IOException {
        byte[] b = new byte[n];
        f.seek(at);
        f.readFully(b);
        return b;
    }
}
