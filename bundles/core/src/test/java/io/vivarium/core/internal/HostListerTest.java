package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicInteger;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.testkit.Bounded;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostListerTest {
    static final ForkJoinPool POOL = new ForkJoinPool(2);
    private final HostLister lister = new HostLister(POOL);

    @TempDir
    Path work;

    @AfterAll
    static void stop() {
        POOL.shutdownNow();
    }

    private HostFiles view(int uid) {
        return new HostFiles(work, "/work", uid, uid);
    }

    @Test
    void listsOnlyRegularFilesAndNeverFollowsSymlinks() throws Exception {
        Files.writeString(work.resolve("a b.txt"), "a");
        Files.createDirectories(work.resolve("d/e"));
        Files.writeString(work.resolve("d/e/deep"), "deep");
        Files.createDirectories(work.resolve("empty"));
        Files.createSymbolicLink(work.resolve("link-to-file"), work.resolve("a b.txt"));
        Files.createSymbolicLink(work.resolve("link-to-root"), Path.of("/"));
        assertEquals(0, Bounded.waitFor(new ProcessBuilder("mkfifo", work.resolve("fifo").toString()).start(),
                Duration.ofSeconds(30), "mkfifo"));
        FileListing l = lister.list(view(0), List.of("/work"), TestModes.content(), null, ListingLimits.standard());
        assertEquals(List.of("/work/a b.txt", "/work/d/e/deep"), List.copyOf(l.files().keySet()));
        assertEquals(64, l.files().get("/work/a b.txt").length());
    }

    @Test
    void refusesPathsOutsideTheWorkspaceOrThroughSymlinks() throws Exception {
        Files.createSymbolicLink(work.resolve("escape"), Path.of("/etc"));
        Files.writeString(work.resolve("file"), "x");
        for (String bad : List.of("/etc", "/work/escape", "/work/file", "/work/missing", "/workspace")) {
            ApiException e = assertThrows(ApiException.class,
                    () -> lister.list(view(0), List.of(bad), TestModes.content(), null, ListingLimits.standard()), bad);
            assertEquals(400, e.status(), bad);
        }
    }

    @Test
    void judgesReadabilityAsTheSandboxUser() throws Exception {
        Files.setPosixFilePermissions(work, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path secret = Files.writeString(work.resolve("secret"), "s");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        Path open = Files.writeString(work.resolve("open"), "o");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        FileListing asNobody = lister.list(view(65534), List.of("/work"), TestModes.content(), null, ListingLimits.standard());
        assertEquals(FingerprintMode.UNREADABLE, asNobody.files().get("/work/secret"));
        assertFalse(asNobody.files().get("/work/open").equals(FingerprintMode.UNREADABLE));

        Path closedDir = Files.createDirectories(work.resolve("closed"));
        Files.setPosixFilePermissions(closedDir, PosixFilePermissions.fromString("rwx------"));
        ApiException e = assertThrows(ApiException.class,
                () -> lister.list(view(65534), List.of("/work"), TestModes.content(), null, ListingLimits.standard()));
        assertTrue(e.getMessage().contains("/work/closed"), e.getMessage());
    }

    @Test
    void enforcesTheFileCountAndSizeLimits() throws Exception {
        for (int i = 0; i < 5; i++) {
            Files.writeString(work.resolve("f" + i), "x");
        }
        ApiException tooMany = assertThrows(ApiException.class, () -> lister.list(view(0), List.of("/work"),
                TestModes.stat(), null, new ListingLimits(4, 1 << 20, Duration.ofSeconds(10))));
        assertTrue(tooMany.getMessage().contains("narrow the paths"));
        ApiException tooBig = assertThrows(ApiException.class, () -> lister.list(view(0), List.of("/work"),
                TestModes.stat(), null, new ListingLimits(100, 20, Duration.ofSeconds(10))));
        assertTrue(tooBig.getMessage().contains("MiB"));
        ApiException tooSlow = assertThrows(ApiException.class, () -> lister.list(view(0), List.of("/work"),
                TestModes.stat(), null, new ListingLimits(100, 1 << 20, Duration.ZERO)));
        assertTrue(tooSlow.getMessage().contains("longer than"));
    }

    @Test
    void reusesFingerprintsOfFilesUnchangedSinceAnEarlierListing() throws Exception {
        Path f = Files.writeString(work.resolve("f"), "one");
        Files.setLastModifiedTime(f, java.nio.file.attribute.FileTime.fromMillis(1_000_000));
        AtomicInteger reads = new AtomicInteger();
        FingerprintMode counting = new FingerprintMode() {
            @Override
            public String name() {
                return "sha256";
            }

            @Override
            public int preference() {
                return 1;
            }

            @Override
            public String fingerprint(Path file, java.nio.file.attribute.BasicFileAttributes a) throws java.io.IOException {
                reads.incrementAndGet();
                return TestModes.content().fingerprint(file, a);
            }

            @Override
            public List<String> guestListingCommand(List<String> dirs) {
                return List.of();
            }
        };
        FileListing first = lister.list(view(0), List.of("/work"), counting, null, ListingLimits.standard());
        // the file's ctime is now; only a listing taken after that second may vouch for it
        FileListing vouching = new FileListing(first.mode(), first.paths(), first.takenAtUnix() + 2, first.files(), first.stamps());
        lister.list(view(0), List.of("/work"), counting, vouching, ListingLimits.standard());
        assertEquals(1, reads.get(), "an unchanged file is not read again");
        lister.list(view(0), List.of("/work"), counting, first, ListingLimits.standard());
        assertEquals(2, reads.get(), "a file changed in the second the listing began is read again (racy)");
        Files.writeString(f, "two");
        FileListing after = lister.list(view(0), List.of("/work"), counting, vouching, ListingLimits.standard());
        assertEquals(3, reads.get());
        assertFalse(after.files().get("/work/f").equals(first.files().get("/work/f")));
    }

    @Test
    void skipsOtherFilesystems() throws Exception {
        Files.writeString(work.resolve("here"), "h");
        Path mnt = Files.createDirectories(work.resolve("mnt"));
        boolean root = "root".equals(System.getProperty("user.name"));
        org.junit.jupiter.api.Assumptions.assumeTrue(root, "mounting a tmpfs needs root");
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "tmpfs", mnt.toString()).start();
        org.junit.jupiter.api.Assumptions.assumeTrue(Bounded.waitFor(mount, Duration.ofSeconds(30), "mount -t tmpfs") == 0,
                "cannot mount a tmpfs here");
        try {
            Files.writeString(mnt.resolve("other-fs"), "o");
            FileListing l = lister.list(view(0), List.of("/work"), TestModes.stat(), null, ListingLimits.standard());
            assertEquals(Set.of("/work/here"), l.files().keySet());
        } finally {
            assertEquals(0, Bounded.waitFor(new ProcessBuilder("umount", mnt.toString()).start(), Duration.ofSeconds(30),
                    "umount " + mnt));
        }
    }
}
