package io.vivarium.images.oci.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.vivarium.api.ApiException;
import io.vivarium.api.Progress;
import io.vivarium.api.spi.RootImage;
import io.vivarium.api.spi.RootImages;
import io.vivarium.testkit.LocalRegistry;
import io.vivarium.testkit.OciTestImages;
import io.vivarium.testkit.TcpPorts;

/** Pulls of real images, made by umoci, through skopeo: layouts, docker archives, refusals. */
class OciRootImagesTest {
    @TempDir
    Path tmp;
    private Path cache;
    private OciRootImages images;

    @BeforeEach
    void setUp() throws IOException {
        assumeTrue(OciTestImages.missingTools() == null, OciTestImages.missingTools());
        cache = tmp.resolve("cache");
        images = new OciRootImages(OciImagesSettings.defaults(Set.of()), cache);
    }

    @Test
    void anImageLayoutIsUnpackedWithItsUserResolvedInItsOwnPasswdAndItsConfiguration() throws IOException {
        String ref = OciTestImages.layout(tmp.resolve("layout"));
        List<String> steps = new ArrayList<>();
        RootImage image = images.pull(ref, (what, done, of) -> steps.add(what + " " + done + "/" + of));

        assertTrue(image.digest().matches("sha256:[0-9a-f]{64}"), image.digest());
        assertTrue(Files.isRegularFile(image.rootfs().resolve("bin/busybox")));
        assertEquals(OciTestImages.UID, image.uid());
        assertEquals(OciTestImages.GID, image.gid());
        assertEquals("app", image.user());
        assertEquals("/home/app", image.workdir());
        assertEquals("bar", image.env().get("FOO"));
        assertEquals("/home/app", image.env().get("HOME"), "HOME from the image's passwd, as umoci gives it");
        assertEquals(List.of("/bin/sh", "-c"), image.entrypoint());
        assertEquals(List.of("echo hello"), image.cmd());
        assertTrue(steps.contains(RootImages.LAYERS + " 1/1"), steps.toString());
        assertTrue(steps.stream().anyMatch(s -> s.startsWith(RootImages.MIB + " ")), steps.toString());
        assertEquals(List.of(image.digest().replace(':', '-')), entries(cache), "the image alone, no staging left");

        assertEquals(image, new UnpackedImages(cache).find(image.digest()).orElseThrow());
        List<String> again = new ArrayList<>();
        assertEquals(image, images.pull(ref, (what, done, of) -> again.add(what)));
        assertEquals(List.of(), again, "a cached image is not pulled again");
    }

    @Test
    void aDockerArchiveGivesTheSameRootAndARestartKeepsItButNotAHalfPull() throws IOException {
        String ref = OciTestImages.layout(tmp.resolve("layout"));
        Path archive = tmp.resolve("image.tar");
        OciTestImages.copy(ref, "docker-archive:" + archive + ":vivarium/test:1");

        RootImage image = images.pull("docker-archive:" + archive, Progress.NONE);
        assertEquals(OciTestImages.UID, image.uid());
        assertEquals("bar", image.env().get("FOO"));
        assertTrue(Files.isSymbolicLink(image.rootfs().resolve("bin/sh")));

        Files.createDirectories(cache.resolve("staging-left-by-a-kill"));
        OciRootImages restarted = new OciRootImages(OciImagesSettings.defaults(Set.of()), cache);
        assertEquals(image, new UnpackedImages(cache).find(image.digest()).orElseThrow());
        assertEquals(List.of(image.digest().replace(':', '-')), entries(cache));

        restarted.remove(image.digest());
        assertTrue(new UnpackedImages(cache).find(image.digest()).isEmpty());
        assertEquals(List.of(), entries(cache));
    }

    @Test
    void anImageInARegistryOnThisHostIsPulledAsTheLayoutItWasPushedFrom() throws Exception {
        assumeTrue(LocalRegistry.missing() == null, LocalRegistry.missing());
        try (LocalRegistry registry = LocalRegistry.start(tmp.resolve("registry"))) {
            OciTestImages.copy(OciTestImages.layout(tmp.resolve("layout")), registry.reference("vivarium/test:1"));

            OciRootImages insecure = new OciRootImages(OciImagesSettings.defaults(Set.of(registry.host())), cache);
            RootImage image = insecure.pull(registry.reference("vivarium/test:1"), Progress.NONE);
            assertEquals(OciTestImages.UID, image.uid());
            assertEquals("/home/app", image.workdir());
            assertTrue(Files.isRegularFile(image.rootfs().resolve("lib64/ld-linux-x86-64.so.2")));

            ApiException unknown = assertThrows(ApiException.class, () -> insecure.pull(registry.reference("vivarium/none:1"),
                    Progress.NONE));
            assertEquals(502, unknown.status(), unknown.getMessage());
            ApiException verified = assertThrows(ApiException.class, () -> images.pull(registry.reference("vivarium/test:1"),
                    Progress.NONE));
            assertEquals(502, verified.status(), "a registry not named insecure is asked over verified TLS: " + verified.getMessage());
        }
    }

    @Test
    void aDeviceNodeAnEntryOutOfTheRootOrAHardLinkOutOfItIsRefusedAndLeavesNothing() throws IOException {
        TarArchiveEntry device = new TarArchiveEntry("dev/kmem", TarConstants.LF_CHR);
        device.setDevMajor(1);
        device.setDevMinor(2);
        TarArchiveEntry link = new TarArchiveEntry("etc/shadow-link", TarConstants.LF_LINK);
        link.setLinkName("../../etc/shadow");
        Map<String, TarArchiveEntry> bad = Map.of("a device node", device, "leads out of the root",
                new TarArchiveEntry("../../escaped"), "out of the root", link);
        int n = 0;
        for (Map.Entry<String, TarArchiveEntry> e : bad.entrySet()) {
            Path layout = tmp.resolve("bad" + n++);
            String ref = OciTestImages.layout(layout);
            TestImage.addLayer(layout, e.getValue(), e.getValue().isFile() ? "x".getBytes(java.nio.charset.StandardCharsets.UTF_8) : new byte[0]);
            ApiException refused = assertThrows(ApiException.class, () -> images.pull(ref, Progress.NONE));
            assertEquals(422, refused.status(), refused.getMessage());
            assertTrue(refused.getMessage().contains(e.getKey()), refused.getMessage());
            assertEquals(List.of(), entries(cache), "nothing half-made is left");
        }
    }

    @Test
    void aFileOverTheLimitIsRefused() throws IOException {
        OciRootImages small = new OciRootImages(new OciImagesSettings(Path.of("/usr/bin/skopeo"), Path.of("/usr/bin/umoci"),
                null, Set.of(), 64 * 1024, 1 << 30, java.time.Duration.ofMinutes(5)), cache);
        String ref = OciTestImages.layout(tmp.resolve("layout"));
        ApiException refused = assertThrows(ApiException.class, () -> small.pull(ref, Progress.NONE));
        assertEquals(422, refused.status());
        assertTrue(refused.getMessage().contains("over the 65536 a file may be"), refused.getMessage());
    }

    @Test
    void referencesAreCheckedBeforeAnyToolRunsAndSourcesThatFailSayWhy() throws IOException {
        for (String bad : List.of("", "ubuntu:24.04", "oci:relative/layout:app", "oci:/a/../b:app", "docker://Host/UPPER:1",
                "docker://h/x:1; rm -rf /", "docker-archive:/tmp/x\n.tar")) {
            ApiException e = assertThrows(ApiException.class, () -> images.pull(bad, Progress.NONE), bad);
            assertEquals(400, e.status(), bad + ": " + e.getMessage());
            assertEquals(400, assertThrows(ApiException.class, () -> images.checkReference(bad)).status());
        }
        ApiException missing = assertThrows(ApiException.class, () -> images.pull("oci:" + tmp.resolve("none") + ":app",
                Progress.NONE));
        assertEquals(400, missing.status(), missing.getMessage());

        int closed = TcpPorts.free();
        OciRootImages insecure = new OciRootImages(OciImagesSettings.defaults(Set.of("127.0.0.1:" + closed)), cache);
        ApiException unreachable = assertThrows(ApiException.class, () -> insecure.pull("docker://127.0.0.1:" + closed
                + "/vivarium/test:1", Progress.NONE));
        assertEquals(502, unreachable.status(), unreachable.getMessage());
        assertTrue(unreachable.getMessage().contains("127.0.0.1:" + closed), unreachable.getMessage());
        assertEquals(List.of(), entries(cache));
    }

    private static List<String> entries(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
