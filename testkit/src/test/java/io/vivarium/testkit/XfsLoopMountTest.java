package io.vivarium.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class XfsLoopMountTest {

    @TempDir
    Path work;

    private static String run(String... argv) throws IOException, InterruptedException {
        Bounded.Ran ran = Bounded.run(Duration.ofSeconds(60), argv);
        assertEquals(0, ran.exitCode(), () -> List.of(argv) + ": " + ran.output());
        return ran.output().strip();
    }

    private static boolean mounted(Path dir) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/mounts")).stream()
                .anyMatch(l -> l.split(" ")[1].equals(dir.toString()));
    }

    @Test
    void anXfsWithReflinkIsMountedAndGoneAfterClose() throws Exception {
        Path dir;
        try (XfsLoopMount xfs = XfsLoopMount.create(work)) {
            dir = xfs.dir();
            assertEquals("xfs", run("stat", "-f", "-c", "%T", dir.toString()));
            Path big = dir.resolve("big");
            run("dd", "if=/dev/urandom", "of=" + big, "bs=1M", "count=32", "status=none");
            run("cp", "--reflink=always", big.toString(), dir.resolve("clone").toString());
            assertEquals(-1L, Files.mismatch(big, dir.resolve("clone")));
        }
        assertFalse(mounted(dir), "unmounted");
        try (var left = Files.list(work)) {
            assertEquals(List.of(), left.toList(), "the image and the mount point are removed");
        }
    }

    /** Waits (bounded) until {@code process} holds {@code file} open. */
    private static void awaitOpen(Process process, Path file) throws Exception {
        Path fds = Path.of("/proc", Long.toString(process.pid()), "fd");
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            try (var open = Files.list(fds)) {
                if (open.anyMatch(fd -> {
                    try {
                        return Files.readSymbolicLink(fd).equals(file);
                    } catch (IOException gone) {
                        return false;
                    }
                })) {
                    return;
                }
            } catch (IOException notYet) {
                // the process is still being made
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the holder did not open " + file + " within 30 s");
            }
            Thread.sleep(10);
        }
    }

    @Test
    void aMountStillInUseIsDetachedAndSaysSo() throws Exception {
        XfsLoopMount xfs = XfsLoopMount.create(work);
        Path held = Files.writeString(xfs.dir().resolve("held"), "x");
        Process holder = new ProcessBuilder("sh", "-c", "exec sleep 600 < " + held).start();
        try {
            awaitOpen(holder, held); // else the close can win the race and unmount a filesystem nothing holds yet
            IOException e = assertThrows(IOException.class, xfs::close);
            assertTrue(e.getMessage().contains("still in use"), e.getMessage());
            assertFalse(mounted(xfs.dir()), "detached lazily all the same");
        } finally {
            Bounded.waitFor(holder.destroyForcibly(), Duration.ofSeconds(30), "the holder ends once killed");
        }
    }
}
