package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.ApiException;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A guest RAM file in memory is sparse, so a create counts what the other VMs' RAM files there may still take. */
class RamReserveTest {

    @TempDir
    Path dir;

    @Test
    void aRamFileThatFitsIsMadeSparseAtTheGuestsSize() throws IOException {
        VmFiles files = VmFiles.of(dir.resolve("vm"), dir.resolve("links"), dir, "vm1", true);

        QemuLauncher.reserveRam(files, 16);

        assertEquals(16L << 20, Files.size(files.ram()));
    }

    @Test
    void theRamOtherVmsMayStillTakeCountsAgainstTheRoom() throws IOException {
        long total = Files.getFileStore(dir).getTotalSpace();
        try (RandomAccessFile other = new RandomAccessFile(dir.resolve("vm0" + QemuLauncher.RAM_IN_MEMORY_SUFFIX).toFile(), "rw")) {
            other.setLength(total); // sparse: takes no room yet, may take all of it
        }
        VmFiles files = VmFiles.of(dir.resolve("vm"), dir.resolve("links"), dir, "vm1", true);

        ApiException refused = assertThrows(ApiException.class, () -> QemuLauncher.reserveRam(files, 16));

        assertEquals(503, refused.status());
        assertTrue(refused.getMessage().contains("may take"), refused.getMessage());
    }
}
