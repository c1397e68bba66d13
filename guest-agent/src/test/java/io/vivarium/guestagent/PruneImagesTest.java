package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** image/prune-images.sh removes exactly the images that no link and no VM disk uses. */
class PruneImagesTest {

    @TempDir
    Path tmp;

    private static boolean onPath(String tool) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .anyMatch(d -> !d.isEmpty() && Files.isExecutable(Path.of(d, tool)));
    }

    private static String run(List<String> argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(true, p.waitFor(60, TimeUnit.SECONDS), argv + " did not finish");
        assertEquals(0, p.exitValue(), argv + " failed: " + out);
        return out;
    }

    private Path image(Path images, String name) throws IOException, InterruptedException {
        Path dir = Files.createDirectories(images.resolve(name));
        run(List.of("qemu-img", "create", "-q", "-f", "qcow2", dir.resolve("workspace.qcow2").toString(), "1M"));
        return dir;
    }

    @Test
    void removesOnlyImagesThatNoLinkAndNoOverlayUses() throws Exception {
        assumeTrue(onPath("qemu-img"), "qemu-img is missing (apt-get install qemu-utils)");
        Path images = Files.createDirectories(tmp.resolve("images"));
        Path linked = image(images, "default-00000000000000a1");
        Path backing = image(images, "default-00000000000000b2");
        Path unused = image(images, "default-00000000000000c3");
        Path unusedOther = image(images, "qemu-ga-00000000000000d4");
        Path running = image(images, "default-00000000000000f6");
        Path staging = Files.createDirectories(images.resolve(".staging-default-00000000000000e5-x"));
        Files.createSymbolicLink(images.resolve("default"), linked.getFileName());
        Path state = Files.createDirectories(tmp.resolve("state/sandboxes/vm1"));
        run(List.of("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
                backing.resolve("workspace.qcow2").toString(), state.resolve("disk.qcow2").toString()));
        String script = Path.of("image/prune-images.sh").toAbsolutePath().toString();
        // a process whose command line looks like a QEMU booting the image "running"
        Process qemu = new ProcessBuilder("sh", "-c", "sleep 60; :", "qemu-system-x86_64", "-kernel",
                running.resolve("kernel").toString()).start();
        try {
            String wouldGo = run(List.of(script, "--out", images.toString(), "--dry-run", tmp.resolve("state").toString()));
            assertEquals(unused + "\n" + unusedOther + "\n", wouldGo);
            assertEquals(true, Files.isDirectory(unused), "--dry-run removes nothing");

            String gone = run(List.of(script, "--out", images.toString(), tmp.resolve("state").toString()));

            assertEquals(wouldGo, gone);
        } finally {
            qemu.descendants().forEach(ProcessHandle::destroyForcibly);
            assertTrue(qemu.destroyForcibly().waitFor(30, TimeUnit.SECONDS), "the fake qemu ends once killed");
        }
        try (Stream<Path> left = Files.list(images)) {
            assertEquals(List.of(".lock-default", ".lock-qemu-ga", ".staging-default-00000000000000e5-x", "default",
                    linked.getFileName().toString(), backing.getFileName().toString(), running.getFileName().toString()),
                    left.map(p -> p.getFileName().toString()).sorted().toList());
        }
        assertEquals(true, Files.isDirectory(staging));
    }
}
