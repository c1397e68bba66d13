package io.vivarium.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ForkJoinPool;

import io.vivarium.api.ApiException;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.GuestLimits;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.SandboxInstance;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChangeTrackerTest {

    @TempDir
    Path work;

    private static final FingerprintMode MODE = GuestListerTest.mode("test", "/bin/list");

    /** An instance whose workspace is {@code work} on the host as /work, and whose guest lists one file and counts the asks. */
    private SandboxInstance instance(List<String> guestAsks) {
        GuestChannel channel = (GuestChannel) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {GuestChannel.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "limits" -> GuestLimits.DEFAULT;
                    case "listFiles" -> {
                        guestAsks.add(String.valueOf(args[1]));
                        yield Optional.of(new ExecResult("guest\t/tmp/g\0", "", 0, false, false, 1));
                    }
                    default -> throw new UnsupportedOperationException(method.getName());
                });
        return (SandboxInstance) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {SandboxInstance.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "hostFiles" -> Optional.of(new HostFiles(work, "/work", 0, 0));
                    case "channel" -> channel;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    @Test
    void aDryRunListsOnTheHostWhereTheWorkspaceHoldsEveryPathElseInTheGuest() throws Exception {
        Files.writeString(work.resolve("a"), "x");
        ForkJoinPool pool = new ForkJoinPool(1);
        try {
            ChangeTracker tracker = new ChangeTracker(new FingerprintModes(), new HostLister(pool));
            List<String> guestAsks = new ArrayList<>();
            SandboxInstance instance = instance(guestAsks);

            assertEquals("x", tracker.listForDryRun(instance, List.of("/work"), MODE).files().get("/work/a"));
            assertEquals(List.of(), guestAsks, "the workspace on the host holds /work: the guest starts nothing");

            assertEquals("guest", tracker.listForDryRun(instance, List.of("/work", "/tmp"), MODE).files().get("/tmp/g"));
            assertEquals(List.of("[/work, /tmp]"), guestAsks, "a path outside the workspace is listed in the guest");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aRenameIsOneDeletionAndOneAddition() {
        var before = new TreeMap<String, String>();
        before.put("/w/a", "1");
        before.put("/w/b", "2");
        before.put("/w/old", "3");
        var after = new TreeMap<String, String>();
        after.put("/w/a", "1");
        after.put("/w/b", "changed");
        after.put("/w/new", "3");
        ChangeSet c = ChangeTracker.compare(before, after, "sha256", List.of("/w"), 7);
        assertEquals(List.of("/w/new"), c.added());
        assertEquals(List.of("/w/b"), c.modified());
        assertEquals(List.of("/w/old"), c.deleted());
        assertEquals(1, c.unchanged());
        assertEquals(7, c.baselineTakenAtUnix());
    }

    @Test
    void probesAreTheTouchedPathsNarrowedToTheScopeWithoutOverlap() {
        assertEquals(List.of("/work/a", "/work/b/c"),
                ChangeTracker.probes(Set.of("/work/a", "/work/a/x", "/work/b/c", "/other/y"), List.of("/work")));
        assertEquals(List.of("/work/src"), ChangeTracker.probes(Set.of("/work"), List.of("/work/src")));
    }

    @Test
    void pathRules() {
        assertEquals(List.of("/work", "/work/a b"), SandboxPaths.check(List.of("/work/a b/", "//work", "/work/./")));
        for (String bad : List.of("work", "/work/../etc", "/work/\nx", "/work/\u007f", "/" + "x".repeat(4096))) {
            ApiException e = assertThrows(ApiException.class, () -> SandboxPaths.check(List.of(bad)), bad);
            assertEquals(400, e.status());
        }
        assertThrows(ApiException.class, () -> SandboxPaths.check(List.of()));
        List<String> many = java.util.stream.IntStream.range(0, 65).mapToObj(i -> "/p" + i).toList();
        assertTrue(assertThrows(ApiException.class, () -> SandboxPaths.check(many)).getMessage().contains("64"));
    }

    @Test
    void guestListingsAreNulTerminatedRecords() {
        var files = GuestLister.parse("abc\t/w/a b\0unreadable\t/w/line\nbreak\0", ListingLimits.standard());
        assertEquals("abc", files.get("/w/a b"));
        assertEquals("unreadable", files.get("/w/line\nbreak"));
        assertThrows(ApiException.class, () -> GuestLister.parse("abc\t/w/a", ListingLimits.standard()));
        assertThrows(ApiException.class, () -> GuestLister.parse("no-tab\0", ListingLimits.standard()));
    }
}
