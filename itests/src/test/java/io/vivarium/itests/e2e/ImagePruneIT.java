package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./vivarium image --prune} (guest-agent/image/prune-images.sh) never removes an image in
 * use, shown with a running gVisor container whose root filesystem the link no longer names (a
 * rebuild moved it on): neither with the daemon's state directory given (its records name the
 * filesystem) nor without it (the running runsc holds it); an image nothing uses goes; once the
 * container is deleted, its root filesystem goes too. In an images directory of its own, whose
 * root filesystems are hard-linked copies of the one build-rootfs.sh built (same filesystem).
 */
class ImagePruneIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final String OLD = "gvisor-rootfs-00000000000000a1";
    private static final String NEW = "gvisor-rootfs-00000000000000b2";
    private static final String UNUSED = "default-00000000000000c3";

    @TempDir
    Path dir;

    @Test
    void anImageARunningContainerStandsOnIsKeptAndGoesOnceNothingUsesIt() throws Exception {
        String missing = Host.gvisorMissing();
        Assumptions.assumeTrue(missing == null, missing);
        Path built = Host.guestImages().resolve("gvisor-rootfs").toRealPath();
        Path images = Files.createDirectories(dir.resolve("images"));
        Assumptions.assumeTrue(Files.getFileStore(built).equals(Files.getFileStore(images)),
                "the test hard-links the built root filesystem, which is on another filesystem than " + images);
        run(List.of("cp", "-al", built.toString(), Files.createDirectories(images.resolve(OLD)).resolve("rootfs").toString()));
        Path link = images.resolve("gvisor-rootfs");
        Files.createSymbolicLink(link, Path.of(OLD, "rootfs"));
        Files.writeString(Files.createDirectories(images.resolve(UNUSED)).resolve("vmlinux"), "nobody boots this");

        Path deployDir = Files.createDirectories(dir.resolve("deploy"));
        Files.write(deployDir.resolve("io.vivarium.backend.gvisor.cfg"), List.of("rootfs=" + link));
        List<String> args = new ArrayList<>(List.of("--features", "core,api-v1,gvisor,fingerprint-sha256",
                "--deploy", deployDir.toString()));
        Path state = dir.resolve("state");
        Daemon daemon = daemons.start(state, args);
        Api api = new Api(daemon.baseUrl(), daemon.adminToken());
        DeployFolder.await("gvisor on the root filesystem of " + link, Duration.ofSeconds(30), () -> {
            for (var b : api.get("/v1/backends").body()) {
                if (b.get("name").asText().equals("gvisor") && b.path("details").path("rootfs").asText()
                        .startsWith(link.toString() + " ")) {
                    return true;
                }
            }
            return null;
        });
        String id = api.createSandbox(Map.of("backend", "gvisor"));
        assertEquals("python3 ok\n", Api.sh(api, id, "python3 -c 'print(\"python3 ok\")'"));

        // a rebuild re-points the link: only the container still stands on the old one
        run(List.of("cp", "-al", built.toString(), Files.createDirectories(images.resolve(NEW)).resolve("rootfs").toString()));
        Path next = images.resolve(".next");
        Files.createSymbolicLink(next, Path.of(NEW, "rootfs"));
        Files.move(next, link, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);

        assertEquals(List.of(images.resolve(UNUSED).toString()), prune(images, "--dry-run"),
                "with no state directory: the running container's root filesystem is seen in use by its processes");
        assertEquals(List.of(images.resolve(UNUSED).toString()), prune(images, state.toString()));
        assertFalse(Files.exists(images.resolve(UNUSED)));
        assertTrue(Files.isDirectory(images.resolve(OLD).resolve("rootfs").resolve("usr")));
        assertTrue(Files.isDirectory(images.resolve(NEW).resolve("rootfs").resolve("usr")), "the link's target stays");
        assertEquals("still here\n", Api.sh(api, id, "echo still here"));

        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
        assertEquals(List.of(images.resolve(OLD).toString()), prune(images, state.toString()),
                "once the container is gone nothing uses its root filesystem");
        assertTrue(Files.isDirectory(images.resolve(NEW).resolve("rootfs").resolve("usr")));
    }

    /** Runs the prune script on {@code images}; returns the directories it printed. */
    private static List<String> prune(Path images, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of("..", "guest-agent", "image", "prune-images.sh")
                .toAbsolutePath().normalize().toString(), "--out", images.toString()));
        cmd.addAll(List.of(args));
        return List.of(run(cmd).lines().toArray(String[]::new));
    }

    private static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "still running: " + cmd);
        assertEquals(0, p.exitValue(), cmd + ": " + out);
        return out;
    }
}
